// The subcommands of the posenc program; each returns the process exit code.
// info, demo and check take no arguments: main refuses any and checks
// POSENC_MAX_ISA before calling them; bench and viz check it once they have
// read theirs (require_known_isa_cap).
#pragma once

namespace posenc::cli {

int run_info(int argc, char** argv);
int run_demo(int argc, char** argv);
int run_check(int argc, char** argv);
int run_bench(int argc, char** argv);
int run_viz(int argc, char** argv);

}  // namespace posenc::cli
