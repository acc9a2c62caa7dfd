// Attacks on real daemons: requests forged by other sessions and nodes,
// connections without (or with foreign) credentials, malformed frames,
// floods of allocations and of waiting calls. Throughout, a reader on
// another node holds a table and must keep reading the same values.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "cluster/cluster_util.h"
#include "control/catalogue/catalogue.h"
#include "control/rpc/stream.h"
#include "control/tls/tls_context.h"
#include "quiver/client.h"
#include "quiver/columnar/builder.h"
#include "quiver/store/object_id.h"
#include "quiver_rpc/store.pb.h"
#include "store/id_directory.h"

namespace quiver {
namespace {

using control::PeerRole;
using control::rpc::Method;
using testing::BinaryPath;
using testing::Child;
using testing::ClusterSpec;
using testing::ConnectOnline;
using testing::Eventually;
using testing::RawSession;
using testing::StartCluster;
using testing::UsedBytes;

RecordBatchPtr RowIdBatch(MemoryPool* pool, int64_t n) {
  Int64Builder b(pool);
  EXPECT_TRUE(b.Reserve(n).ok());
  for (int64_t i = 0; i < n; ++i) b.UnsafeAppend(i);
  return RecordBatch::FromArrays({"v"}, {b.Finish().ValueOrDie()}).ValueOrDie();
}

// The chunk ids of `name` as node `node`'s daemon lists them.
std::vector<uint64_t> ChunkIds(RawSession* s, const std::string& name) {
  wire::LookupRequest look;
  look.set_name(name);
  wire::LookupReply found;
  EXPECT_TRUE(s->Call(Method::kLookup, look, &found).ok());
  std::vector<uint64_t> ids;
  for (const auto& c : found.chunks()) ids.push_back(c.id());
  return ids;
}

class AttackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterSpec spec;
    spec.nodes = 3;
    cluster_ = StartCluster(spec);
    ASSERT_NE(cluster_, nullptr);
    owner_ = ConnectOnline(*cluster_, 0);
    ASSERT_NE(owner_, nullptr);
    auto batch = RowIdBatch(owner_->local_pool(), 200000);
    data_ = reinterpret_cast<uint64_t>(batch->column(0)->data()->buffers[1]->data());
    ASSERT_TRUE(owner_->Publish(batch, "victim").ok());
    reader_ = testing::StartReader(*cluster_, 1, "victim");
    sums_ = reader_.WaitForLine("sums=", 30000);
    ASSERT_FALSE(sums_.empty()) << reader_.output();
    sums_ =
        sums_.substr(sums_.find("sums="), sums_.find(" sums_ok") - sums_.find("sums="));
    ASSERT_FALSE(reader_.WaitForLine("pinned", 30000).empty());
  }
  // The reader still sums what it first summed.
  void ExpectReaderIntact() {
    const std::string again = testing::ResumReader(&reader_);
    EXPECT_NE(again.find(sums_), std::string::npos) << sums_ << " vs " << again;
  }
  // The table is still published and readable from node 2.
  void ExpectTableIntact() {
    Child r = Child::Start({BinaryPath("quiver"), "demo-read", "--config",
                            cluster_->config_path(), "--node", "2", "--name", "victim"});
    EXPECT_EQ(r.Finish(), 0) << r.output();
    EXPECT_NE(r.output().find(sums_), std::string::npos) << r.output();
  }

  std::unique_ptr<control::LocalCluster> cluster_;
  std::unique_ptr<Client> owner_;
  uint64_t data_ = 0;
  Child reader_;
  std::string sums_;
};

TEST_F(AttackTest, OtherSessionsCannotReleaseUnpublishOrFree) {
  // A client of node 1 with its own session at the owner.
  auto rogue = RawSession::Open(*cluster_, 0, PeerRole::kClient, 1);
  ASSERT_NE(rogue, nullptr);
  // Pin handles are 128 random bits, valid only in the session that took
  // them: guesses release nothing.
  for (int i = 0; i < 200; ++i) {
    wire::ReleaseRequest rel;
    rel.add_pins(control::Handle::Random().Bytes());
    auto r = rogue->Call(Method::kRelease, rel);
    EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
  }
  wire::ReleaseRequest short_handle;
  short_handle.add_pins("\x01");
  EXPECT_TRUE(rogue->Call(Method::kRelease, short_handle).status().IsInvalid());
  // Unpublish: the publisher is connected, so only it may.
  wire::UnpublishRequest un;
  un.set_name("victim");
  auto r = rogue->Call(Method::kUnpublish, un);
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << r.status().ToString();
  // Nor can it name the chunks directly.
  for (uint64_t id : ChunkIds(rogue.get(), "victim")) un.add_chunk_ids(id);
  EXPECT_EQ(rogue->Call(Method::kUnpublish, un).status().code(),
            StatusCode::kPermissionDenied);
  // Free, seal and realloc of memory it did not allocate.
  wire::FreeRequest fr;
  fr.add_addresses(data_);
  r = rogue->Call(Method::kFree, fr);
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << r.status().ToString();
  uint8_t* mine = nullptr;
  ASSERT_TRUE(owner_->local_pool()->Allocate(4096, 64, &mine).ok());
  wire::SealRequest seal;
  auto* range = seal.add_ranges();
  range->set_address(reinterpret_cast<uint64_t>(mine));
  range->set_length(4096);
  EXPECT_EQ(rogue->Call(Method::kSeal, seal).status().code(),
            StatusCode::kPermissionDenied);
  wire::ReallocRequest re;
  re.set_address(reinterpret_cast<uint64_t>(mine));
  re.set_new_size(8192);
  EXPECT_EQ(rogue->Call(Method::kRealloc, re).status().code(),
            StatusCode::kPermissionDenied);
  fr.set_addresses(0, reinterpret_cast<uint64_t>(mine));
  EXPECT_EQ(rogue->Call(Method::kFree, fr).status().code(),
            StatusCode::kPermissionDenied);
  // Garbage addresses are errors, not crashes.
  fr.set_addresses(0, 12345);
  EXPECT_TRUE(rogue->Call(Method::kFree, fr).status().IsNotFound());
  wire::PinRequest pin;
  pin.add_chunk_ids(0xDEADBEEF);
  EXPECT_TRUE(rogue->Call(Method::kPin, pin).status().IsNotFound());
  owner_->local_pool()->Free(mine, 4096);
  ExpectReaderIntact();
  ExpectTableIntact();
}

TEST_F(AttackTest, NoNodeCanActAsAnother) {
  // A client certificate cannot call what daemons call.
  auto client1 = RawSession::Open(*cluster_, 0, PeerRole::kClient, 1);
  ASSERT_NE(client1, nullptr);
  const auto ids = ChunkIds(client1.get(), "victim");
  ASSERT_FALSE(ids.empty());
  wire::ReplicaRemoveRequest rm;
  for (uint64_t id : ids) rm.add_chunk_ids(id);
  wire::FlushRequest flush;
  wire::StateUpdate state;
  state.set_flags(0xFF);
  wire::HeartbeatRequest hb;
  for (auto [method, msg] :
       std::vector<std::pair<Method, const google::protobuf::MessageLite*>>{
           {Method::kReplicaRemove, &rm},
           {Method::kFlush, &flush},
           {Method::kStateUpdate, &state},
           {Method::kHeartbeat, &hb},
           {Method::kReplicaSync, &flush}}) {
    auto r = client1->Call(method, *msg);
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied)
        << control::rpc::MethodName(static_cast<uint8_t>(method)) << ": "
        << r.status().ToString();
  }
  // A client of node 1 does not set node 0's state word.
  wire::SetStateRequest set;
  set.set_flags(0x40);
  set.set_mask(0x40);
  EXPECT_EQ(client1->Call(Method::kSetState, set).status().code(),
            StatusCode::kPermissionDenied);
  wire::StateReply st;
  ASSERT_TRUE(client1->Call(Method::kGetState, wire::Empty(), &st).ok());
  EXPECT_EQ(st.flags() & 0x40, 0u);
  // Node 1's daemon removes only chunks homed at itself: the victim is
  // homed at node 0, so its forged removal changes nothing.
  auto daemon1 = RawSession::Open(*cluster_, 0, PeerRole::kDaemon, 1);
  ASSERT_NE(daemon1, nullptr);
  EXPECT_TRUE(daemon1->Call(Method::kReplicaRemove, rm).ok());
  // Nor can it register a chunk as another node's.
  wire::ReplicaPutRequest put;
  auto* c = put.add_chunks();
  c->set_home(2);
  c->set_name("forged");
  EXPECT_EQ(daemon1->Call(Method::kReplicaPut, put).status().code(),
            StatusCode::kPermissionDenied);
  // Daemons do not allocate or pin for themselves.
  wire::MallocRequest m;
  m.set_size(64);
  EXPECT_EQ(daemon1->Call(Method::kMalloc, m).status().code(),
            StatusCode::kPermissionDenied);
  ExpectReaderIntact();
  ExpectTableIntact();
}

TEST_F(AttackTest, WithoutTheClustersCredentialsNothingIsPossible) {
  const auto& node0 = cluster_->config().nodes[0];
  // Plain TCP: a frame sent before (instead of) a TLS handshake gets no
  // answer, and the connection is closed.
  {
    auto fd = control::rpc::ConnectTcp(node0.control, 5000);
    ASSERT_TRUE(fd.ok()) << fd.status().ToString();
    std::string frame;
    control::rpc::AppendFrame(control::rpc::FrameKind::kRequest, 2, 1, "", &frame);
    ASSERT_EQ(send(*fd, frame.data(), frame.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(frame.size()));
    char buf[256];
    timeval tv{10, 0};
    setsockopt(*fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    int fl = fcntl(*fd, F_GETFL);
    fcntl(*fd, F_SETFL, fl & ~O_NONBLOCK);
    ssize_t n = recv(*fd, buf, sizeof(buf), 0);
    // Whatever comes back is a TLS alert, never a reply frame.
    EXPECT_TRUE(n <= 0 || static_cast<unsigned char>(buf[0]) == 0x15) << n;
    close(*fd);
  }
  // TLS with another cluster's CA (same cluster name, other keys): refused.
  char tmpl[] = "/tmp/quiver-foreign-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string foreign = std::string(tmpl) + "/creds";
  ASSERT_TRUE(control::InitCredentials(foreign, cluster_->config().name, {0, 1, 2}).ok());
  auto tls = control::TlsContext::Make(foreign, cluster_->config().name,
                                       PeerRole::kDaemon, 1, false);
  ASSERT_TRUE(tls.ok());
  auto ch = control::rpc::DialTls(node0.control, *tls, cluster_->config().name,
                                  {cluster_->config().name, PeerRole::kDaemon, 0}, 5000);
  if (ch.ok()) {
    // TLS 1.3 clients learn of the refusal on their first read.
    auto r = (*ch)->Call(1, "", 5000);
    EXPECT_FALSE(r.ok());
  }
  std::filesystem::remove_all(tmpl);
  // Another user cannot even connect to the node's socket.
  pid_t child = fork();
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    auto unix_ch = control::rpc::DialUnix(node0.socket, 2000);
    _exit(unix_ch.ok() ? 1 : 0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // Malformed frames from an authenticated client: the connection closes,
  // the daemon serves everyone else.
  auto s = RawSession::Open(*cluster_, 0, PeerRole::kClient, 2);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->channel()->Call(99, "garbage", 5000).status().code() ==
              StatusCode::kNotImplemented);
  // A store method with a payload that is not its message.
  EXPECT_TRUE(s->channel()->Call(70, "garbage", 5000).status().IsInvalid());
  auto bad =
      s->channel()->Call(control::rpc::MethodByte(Method::kMalloc), "\xff\xff\xff", 5000);
  EXPECT_TRUE(bad.status().IsInvalid()) << bad.status().ToString();
  ExpectReaderIntact();
  ExpectTableIntact();
}

// One client takes all the memory it can: its quota stops it, and another
// client still allocates; a client allocating as fast as it can is slowed
// by its rate limit, not others.
TEST(AttackLimitsTest, AFloodingClientLeavesOthersAbleToAllocate) {
  ClusterSpec spec;
  spec.nodes = 2;
  spec.limits.malloc_rate = 2000;
  auto cluster = StartCluster(spec);
  ASSERT_NE(cluster, nullptr);
  // Two clients of node 1 in this process (a process is of one node).
  auto flooder = ConnectOnline(*cluster, 1);
  auto other = ConnectOnline(*cluster, 1);
  ASSERT_TRUE(flooder && other);
  EXPECT_TRUE(Client::Connect({cluster->config_path(), 0}).status().IsInvalid());
  // Quota: 1 MiB at a time at node 0 until refused.
  std::vector<uint8_t*> got;
  Status refused;
  for (int i = 0; i < 200 && refused.ok(); ++i) {
    uint8_t* p = nullptr;
    refused = flooder->pool(0)->Allocate(1 << 20, 64, &p);
    if (refused.ok()) got.push_back(p);
  }
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.IsOutOfMemory()) << refused.ToString();
  EXPECT_NE(refused.message().find("quota"), std::string::npos) << refused.ToString();
  // Half the 64 MiB region, give or take the region's own metadata.
  EXPECT_LE(got.size() * (1u << 20), 33u << 20);
  uint8_t* p = nullptr;
  EXPECT_TRUE(other->pool(0)->Allocate(1 << 20, 64, &p).ok());
  // And a client of another node, in its own process.
  Child elsewhere = testing::StartActor(*cluster, 0, {"--alloc", "0:1048576"});
  EXPECT_FALSE(elsewhere.WaitForLine("ready", 30000).empty()) << elsewhere.output();
  for (auto* q : got) flooder->pool(0)->Free(q, 1 << 20);
  ASSERT_TRUE(flooder->Drain().ok());
  // Rate: small allocations as fast as possible from one session.
  int rate_refused = 0;
  for (int i = 0; i < 6000; ++i) {
    auto a = flooder->RemoteAllocate(0, 64, 64);
    if (!a.ok()) {
      EXPECT_NE(a.status().message().find("rate limit"), std::string::npos)
          << a.status().ToString();
      ++rate_refused;
      break;
    }
    (void)flooder->RemoteFree(0, *a);
  }
  EXPECT_GT(rate_refused, 0);
  EXPECT_TRUE(other->RemoteAllocate(0, 64, 64).ok());
}

// A daemon may register chunks only over its own memory (the home rule),
// wherever the registration arrives: daemon 2 telling node 0 that the
// victim's buffers (in node 0's region) are its chunk "forged" is refused,
// and node 0 holds no publication of them for it.
TEST_F(AttackTest, AForgedReplicaPutIsRefusedAtEveryNode) {
  auto as_daemon2 = RawSession::Open(*cluster_, 0, PeerRole::kDaemon, 2);
  ASSERT_NE(as_daemon2, nullptr);
  auto local = RawSession::Open(*cluster_, 0, PeerRole::kClient, 0, /*unix_socket=*/true);
  ASSERT_NE(local, nullptr);
  wire::LookupRequest look;
  look.set_name("victim");
  wire::LookupReply found;
  ASSERT_TRUE(local->Call(Method::kLookup, look, &found).ok());
  ASSERT_EQ(found.chunks_size(), 1);
  for (uint32_t target : {0u, 1u}) {
    auto to = target == 0 ? std::move(as_daemon2)
                          : RawSession::Open(*cluster_, 1, PeerRole::kDaemon, 2);
    ASSERT_NE(to, nullptr);
    wire::ReplicaPutRequest put;
    auto* c = put.add_chunks();
    *c = found.chunks(0);
    c->set_id(0xF0F0F0F0ULL + target);
    c->set_home(2);
    c->set_name("forged");
    put.set_generation(1);
    put.set_version(1);
    auto r = to->Call(Method::kReplicaPut, put);
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied)
        << "node " << target << ": " << r.status().ToString();
  }
  wire::LookupRequest forged;
  forged.set_name("forged");
  EXPECT_TRUE(local->Call(Method::kLookup, forged, &found).IsNotFound());
  ExpectReaderIntact();
  ExpectTableIntact();
}

// A session holds at most max_pins_per_session pins at one daemon.
TEST(AttackLimitsTest, PinsBeyondTheCapAreRefused) {
  ClusterSpec spec;
  spec.nodes = 2;
  spec.limits.max_pins_per_session = 20;
  auto cluster = StartCluster(spec);
  ASSERT_NE(cluster, nullptr);
  auto owner = ConnectOnline(*cluster, 0);
  ASSERT_NE(owner, nullptr);
  ASSERT_TRUE(owner->Publish(RowIdBatch(owner->local_pool(), 1000), "t").ok());
  auto reader = RawSession::Open(*cluster, 0, PeerRole::kClient, 1);
  ASSERT_NE(reader, nullptr);
  const auto ids = ChunkIds(reader.get(), "t");
  ASSERT_EQ(ids.size(), 1u);
  wire::PinRequest pin;
  pin.add_chunk_ids(ids[0]);
  int pinned = 0, refused = 0;
  for (int i = 0; i < 25; ++i) {
    auto r = reader->Call(Method::kPin, pin);
    pinned += r.ok();
    refused += r.status().code() == StatusCode::kCapacityError;
  }
  EXPECT_EQ(pinned, 20);
  EXPECT_EQ(refused, 5);
}

}  // namespace
}  // namespace quiver
