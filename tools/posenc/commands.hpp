// The subcommands of the posenc program; each returns the process exit code.
// info, demo and check take no arguments: main refuses any before calling them.
#pragma once

namespace posenc::cli {

int run_info(int argc, char** argv);
int run_demo(int argc, char** argv);
int run_check(int argc, char** argv);
int run_bench(int argc, char** argv);
int run_viz(int argc, char** argv);

}  // namespace posenc::cli
