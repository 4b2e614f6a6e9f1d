// OpenMP after fork(). libgomp keeps each thread's team of workers for its
// next parallel region; in a child forked from a thread that had led a team,
// that team's threads do not exist, and its next region with more than one
// thread waits for them forever. posenc remembers which threads led its
// teams (its regions and oneDNN's primitives run from them) and, in a child
// of such a thread, runs every call on one thread. A child forked from a
// thread that led none keeps its thread counts (its first region makes a
// new team).
#pragma once

namespace posenc {

// Called before the calling thread may lead an OpenMP team of more than one
// thread.
void note_openmp_team();

// True in a process forked, at any depth, from a thread that had led one of
// posenc's teams.
bool openmp_teams_lost_to_fork();

}  // namespace posenc
