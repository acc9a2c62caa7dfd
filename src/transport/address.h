// host:port text to a socket address, for UCX listeners and endpoints.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "quiver/util/result.h"

namespace quiver::transport {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

// "host:port" or "[v6]:port"; `passive` for a listener (host may be empty
// or 0.0.0.0). Invalid naming the text for anything else.
Result<SocketAddress> ResolveAddress(const std::string& host_port, bool passive);
uint16_t PortOf(const sockaddr_storage& address);

}  // namespace quiver::transport
