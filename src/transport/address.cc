#include "transport/address.h"

#include <netdb.h>
#include <netinet/in.h>

#include <cstring>

namespace quiver::transport {

Result<SocketAddress> ResolveAddress(const std::string& host_port, bool passive) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos || colon + 1 == host_port.size()) {
    return Status::Invalid("address '", host_port, "' is not host:port");
  }
  std::string host = host_port.substr(0, colon);
  const std::string port = host_port.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  for (char c : port) {
    if (c < '0' || c > '9') return Status::Invalid("address '", host_port, "': bad port");
  }
  if (port.size() > 5 || std::stoul(port) > 65535) {
    return Status::Invalid("address '", host_port, "': port out of range");
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const int rc =
      getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return Status::Invalid("address '", host_port, "': ", gai_strerror(rc));
  }
  SocketAddress out;
  std::memcpy(&out.storage, found->ai_addr, found->ai_addrlen);
  out.length = found->ai_addrlen;
  freeaddrinfo(found);
  return out;
}

uint16_t PortOf(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
  }
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
  }
  return 0;
}

}  // namespace quiver::transport
