// quiverd: the Quiver node daemon (also `quiver node`).
#include "daemon_main.h"

int main(int argc, char** argv) {
  return quiver::control::daemon::DaemonMain(argc, argv);
}
