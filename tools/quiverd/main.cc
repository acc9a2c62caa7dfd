// quiverd: the Quiver node daemon (also `quiver node`).
#include "quiver/control/node_daemon.h"

int main(int argc, char** argv) { return quiver::control::DaemonMain(argc, argv); }
