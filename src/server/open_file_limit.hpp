// The process's limit on open files at start-up: each connection takes a descriptor, and the
// usual soft limit (1,024) is below what --max-connections allows, so it is raised.
#pragma once

#include <cstddef>

namespace cua_s1 {

// Raises the soft RLIMIT_NOFILE to the hard limit and logs the result ("open_file_limit"); a
// warning when the limit stays below `max_connections` plus some room for the server's own
// files (connections beyond it wait in the listen backlog while accept backs off).
void raise_open_file_limit(size_t max_connections);

}  // namespace cua_s1
