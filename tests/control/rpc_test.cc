// The control protocol's transport (control/rpc) over the Unix socket:
// pipelining with replies out of order, errors that keep their code and
// message, connection ends seen once on both sides, malformed and hostile
// input that closes one connection while the engine serves the others, and
// time-outs. No assertion is on time, except "eventually, within a
// generous bound".
#include "control/rpc_test_util.h"

namespace quiver::control::rpc {
namespace {

using namespace rpc_testing;  // NOLINT: the fixture of these tests

TEST_F(RpcTest, EchoOverTheUnixSocket) {
  StartUnix();
  auto ch = Dial();
  ASSERT_NE(ch, nullptr);
  ASSERT_OK_AND_ASSIGN(std::string reply, ch->Call(kEcho, "hello", kLong));
  EXPECT_EQ(reply, "hello");
  ASSERT_OK_AND_ASSIGN(reply, ch->Call(kEcho, "", kLong));
  EXPECT_EQ(reply, "");
  const std::string big(3 << 20, 'b');  // bigger than any socket buffer
  ASSERT_OK_AND_ASSIGN(reply, ch->Call(kEcho, big, kLong));
  EXPECT_EQ(reply, big);
  EXPECT_TRUE(ch->peer().unix_socket);
  EXPECT_EQ(ch->peer().uid, geteuid());
  ASSERT_TRUE(Eventually([&] { return server_.opened() == 1; }));
  const auto peers = server_.peers();
  ASSERT_EQ(peers.size(), 1u);
  EXPECT_TRUE(peers[0].unix_socket);
  EXPECT_EQ(peers[0].pid, getpid());  // from the kernel, not from the client
  EXPECT_EQ(peers[0].uid, geteuid());
}

TEST_F(RpcTest, PipelinedCallsAreAnsweredOutOfOrder) {
  StartUnix();
  auto ch = Dial();
  ASSERT_NE(ch, nullptr);
  constexpr int kCalls = 16;
  std::vector<uint64_t> ids;
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_OK_AND_ASSIGN(uint64_t id, ch->Send(kPark, "call " + std::to_string(i)));
    ids.push_back(id);
  }
  ASSERT_TRUE(Eventually([&] { return server_.parked() == kCalls; }));
  // Parked calls hold up nothing.
  ASSERT_OK_AND_ASSIGN(std::string reply, ch->Call(kEcho, "not blocked", kLong));
  EXPECT_EQ(reply, "not blocked");
  // Several threads wait for their calls while another thread answers
  // them last first.
  std::vector<std::string> got(kCalls);
  std::vector<Status> errors(kCalls);
  std::vector<std::thread> waiters;
  for (int t = 0; t < 4; ++t) {
    waiters.emplace_back([&, t] {
      for (int i = t; i < kCalls; i += 4) {
        auto r = ch->Wait(ids[i], kLong);
        if (r.ok()) {
          got[i] = *r;
        } else {
          errors[i] = r.status();
        }
      }
    });
  }
  std::thread answerer([&] {
    auto parked = server_.TakeParked();
    for (auto it = parked.rbegin(); it != parked.rend(); ++it) {
      it->connection->Reply(it->call_id, it->method, "answer to " + it->payload);
      std::this_thread::sleep_for(milliseconds(1));
    }
  });
  answerer.join();
  for (auto& w : waiters) w.join();
  for (int i = 0; i < kCalls; ++i) {
    EXPECT_TRUE(errors[i].ok()) << errors[i].ToString();
    EXPECT_EQ(got[i], "answer to call " + std::to_string(i));
  }
}

TEST_F(RpcTest, ErrorsTravelWithTheirCodeAndMessage) {
  StartUnix();
  auto ch = Dial();
  ASSERT_NE(ch, nullptr);
  for (int code = 1; code <= static_cast<int>(StatusCode::kObjectLost); ++code) {
    const std::string message =
        "refusal " + std::to_string(code) + " \xC3\xA9\n" + std::string("\0x", 2);
    std::string payload(1, static_cast<char>(code));
    payload += message;
    auto r = ch->Call(kFail, payload, kLong);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(static_cast<int>(r.status().code()), code) << r.status().ToString();
    EXPECT_EQ(r.status().message(), message);
  }
  // Errors are answers: the connection goes on.
  ASSERT_OK(ch->status());
  ASSERT_OK_AND_ASSIGN(std::string reply, ch->Call(kEcho, "still here", kLong));
  EXPECT_EQ(reply, "still here");
}

TEST_F(RpcTest, ErrorFramesRoundTrip) {
  for (int code = 1; code <= static_cast<int>(StatusCode::kObjectLost); ++code) {
    Status st(static_cast<StatusCode>(code), "message");
    Status back = DecodeError(EncodeError(st));
    EXPECT_EQ(back.code(), st.code());
    EXPECT_EQ(back.message(), "message");
  }
  // Malformed error payloads are the peer's error, never trusted.
  EXPECT_TRUE(DecodeError("").IsIOError());
  EXPECT_TRUE(DecodeError(std::string(1, '\0')).IsIOError());
  EXPECT_TRUE(DecodeError(std::string(1, '\x14')).IsIOError());
  EXPECT_TRUE(DecodeError(std::string(1, '\xFF')).IsIOError());
}

TEST_F(RpcTest, ACallWithoutAnAnswerTimesOut) {
  StartUnix();
  auto ch = Dial();
  ASSERT_NE(ch, nullptr);
  auto r = ch->Call(kSilent, "", 200);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().ToString();
  // The connection is fine, and a late answer to a timed-out call is dropped.
  ASSERT_OK_AND_ASSIGN(uint64_t id, ch->Send(kPark, "late"));
  ASSERT_TRUE(Eventually([&] { return server_.parked() == 1; }));
  EXPECT_EQ(ch->Wait(id, 50).status().code(), StatusCode::kDeadlineExceeded);
  for (auto& p : server_.TakeParked()) p.connection->Reply(p.call_id, p.method, "late");
  ASSERT_OK_AND_ASSIGN(std::string reply, ch->Call(kEcho, "next", kLong));
  EXPECT_EQ(reply, "next");
  EXPECT_TRUE(ch->Wait(id, 10).status().IsInvalid());  // no such call any more
}

// ---------------------------------------------------------------------------
// Connection ends

TEST_F(RpcTest, AClientClosingRunsOnCloseOnce) {
  StartUnix();
  auto ch = Dial();
  ASSERT_NE(ch, nullptr);
  ASSERT_OK(ch->Send(kPark, "left behind").status());
  ASSERT_OK(ch->Call(kEcho, "x", kLong).status());
  ASSERT_TRUE(Eventually([&] { return server_.parked() == 1; }));
  ch.reset();
  ASSERT_TRUE(Eventually([&] { return server_.closed() == 1; }));
  ASSERT_TRUE(Eventually([&] { return server_.engine()->connection_count() == 0; }));
  // Answering a call of a closed connection is harmless, and closing it
  // again runs nothing.
  for (auto& p : server_.TakeParked()) {
    p.connection->Reply(p.call_id, p.method, "nobody listens");
    EXPECT_TRUE(p.connection->closed());
    p.connection->Close(Status::Cancelled("again"));
  }
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(server_.closed(), 1);
  EXPECT_TRUE(server_.EachClosedOnce());
}

TEST_F(RpcTest, TheServerClosingFailsWaitingCallsPromptly) {
  StartUnix();
  auto ch = Dial();
  ASSERT_NE(ch, nullptr);
  ASSERT_OK_AND_ASSIGN(uint64_t id, ch->Send(kPark, "wait"));
  ASSERT_TRUE(Eventually([&] { return server_.parked() == 1; }));
  auto waiting = std::async(std::launch::async, [&] {
    const auto start = Clock::now();
    Status st = ch->Wait(id, 10 * kLong).status();
    return std::make_pair(st, Clock::now() - start);
  });
  // The service drops the connection (a lease ran out, say).
  auto parked = server_.TakeParked();
  parked[0].connection->Close(Status::Cancelled("dropped by the test"));
  ASSERT_EQ(waiting.wait_for(milliseconds(kLong)), std::future_status::ready)
      << "the waiting call did not notice the end of its connection";
  auto [st, took] = waiting.get();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.code(), StatusCode::kDeadlineExceeded) << st.ToString();
  EXPECT_LT(took, milliseconds(kLong));
  // The channel stays failed: later calls fail at once.
  EXPECT_FALSE(ch->status().ok());
  EXPECT_FALSE(ch->Call(kEcho, "x", 10 * kLong).ok());
  ASSERT_TRUE(Eventually([&] { return server_.closed() == 1; }));
}

TEST_F(RpcTest, StoppingTheEngineFailsWaitingCallsPromptly) {
  StartUnix();
  std::vector<std::unique_ptr<Channel>> channels;
  std::vector<std::future<Status>> waits;
  for (int i = 0; i < 3; ++i) {
    channels.push_back(Dial());
    ASSERT_NE(channels.back(), nullptr);
    ASSERT_OK_AND_ASSIGN(uint64_t id, channels.back()->Send(kPark, "wait"));
    Channel* ch = channels.back().get();
    waits.push_back(std::async(std::launch::async,
                               [ch, id] { return ch->Wait(id, 10 * kLong).status(); }));
  }
  ASSERT_TRUE(Eventually([&] { return server_.parked() == 3; }));
  server_.Stop();
  for (auto& w : waits) {
    ASSERT_EQ(w.wait_for(milliseconds(kLong)), std::future_status::ready);
    Status st = w.get();
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.code(), StatusCode::kDeadlineExceeded) << st.ToString();
  }
  EXPECT_EQ(server_.closed(), 3);
  EXPECT_TRUE(server_.EachClosedOnce());
  EXPECT_FALSE(DialUnix(socket_, 1000).ok());  // the socket file is gone
}

TEST_F(RpcTest, OnOpenRefusalClosesTheConnection) {
  StartUnix();
  server_.set_refuse(true);
  auto ch = Dial();
  ASSERT_NE(ch, nullptr);
  EXPECT_FALSE(ch->Call(kEcho, "x", kLong).ok());
  server_.set_refuse(false);
  auto ok = Dial();
  ASSERT_NE(ok, nullptr);
  ASSERT_OK(ok->Call(kEcho, "x", kLong).status());
}

// ---------------------------------------------------------------------------
// Malformed input

TEST_F(RpcTest, MalformedFramesCloseOnlyTheirConnection) {
  StartUnix();
  auto good = Dial();
  ASSERT_NE(good, nullptr);
  const uint32_t kHeaderLength = kFrameHeaderBytes - 4;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"length below the header", RawFrame(kHeaderLength - 1, 1, kEcho, 0, 1)},
      {"length zero", RawFrame(0, 1, kEcho, 0, 1)},
      {"kind 0", RawFrame(kHeaderLength, 0, kEcho, 0, 1)},
      {"kind 4", RawFrame(kHeaderLength, 4, kEcho, 0, 1)},
      {"kind 255", RawFrame(kHeaderLength, 255, kEcho, 0, 1)},
      {"flags set", RawFrame(kHeaderLength, 1, kEcho, 1, 1)},
      {"high flags set", RawFrame(kHeaderLength, 1, kEcho, 0x8000, 1)},
      {"oversize", RawFrame(static_cast<uint32_t>(kHeaderLength + kMaxFramePayload + 1),
                            1, kEcho, 0, 1)},
      {"largest length", RawFrame(0xFFFFFFFFu, 1, kEcho, 0, 1)},
  };
  int opened = 1;
  for (const auto& [what, bytes] : cases) {
    RawClient raw(socket_);
    ASSERT_TRUE(raw.connected()) << what;
    ++opened;
    // A good frame first is answered; then the bad one ends the connection.
    ASSERT_TRUE(raw.Send(RawFrame(kHeaderLength + 2, 1, kEcho, 0, 7, "ok") + bytes))
        << what;
    std::string got;
    EXPECT_TRUE(raw.ReadUntilClosed(&got)) << what << ": connection not closed";
    EXPECT_EQ(got, RawFrame(kHeaderLength + 2, 2, kEcho, 0, 7, "ok")) << what;
    // The engine serves the others all along.
    ASSERT_OK_AND_ASSIGN(std::string reply, good->Call(kEcho, what, kLong));
    EXPECT_EQ(reply, what);
  }
  ASSERT_TRUE(Eventually([&] { return server_.closed() == opened - 1; }));
  EXPECT_TRUE(server_.EachClosedOnce());
  EXPECT_EQ(server_.engine()->connection_count(), 1u);
}

TEST_F(RpcTest, RandomGarbageClosesTheConnection) {
  StartUnix();
  auto good = Dial();
  ASSERT_NE(good, nullptr);
  std::mt19937_64 rng(20240611);
  int closed_ones = 0;
  for (int round = 0; round < 40; ++round) {
    std::string garbage(1 + rng() % 8192, '\0');
    for (char& c : garbage) c = static_cast<char>(rng());
    // What the decoder makes of it decides what the engine must do: a
    // stream it refuses must be closed (a valid-looking header that waits
    // for more bytes is left open).
    FrameDecoder decoder;
    decoder.Append(garbage);
    bool refused = false;
    for (;;) {
      FrameHeader h;
      std::string_view payload;
      auto more = decoder.Next(&h, &payload);
      if (!more.ok()) refused = true;
      if (!more.ok() || !*more) break;
    }
    RawClient raw(socket_);
    ASSERT_TRUE(raw.connected());
    raw.Send(garbage);  // may fail part way: the engine may close first
    if (refused) {
      EXPECT_TRUE(raw.ReadUntilClosed()) << "round " << round;
      ++closed_ones;
    }
    ASSERT_OK_AND_ASSIGN(std::string reply, good->Call(kEcho, "alive", kLong));
    EXPECT_EQ(reply, "alive");
  }
  EXPECT_GT(closed_ones, 30);
}

TEST_F(RpcTest, StrayRepliesAreIgnored) {
  StartUnix();
  RawClient raw(socket_);
  ASSERT_TRUE(raw.connected());
  const uint32_t h = kFrameHeaderBytes - 4;
  // Replies and errors to calls the server never made are dropped...
  ASSERT_TRUE(raw.Send(RawFrame(h + 3, 2, kEcho, 0, 99, "why") +
                       RawFrame(h + 1, 3, kEcho, 0, 98, std::string(1, '\x04')) +
                       RawFrame(h + 2, 1, kEcho, 0, 5, "hi")));
  // ...and the connection answers the request after them.
  std::string got;
  const std::string want = RawFrame(h + 2, 2, kEcho, 0, 5, "hi");
  ASSERT_TRUE(Eventually([&] {
    char buf[256];
    ssize_t n = recv(raw.fd(), buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) got.append(buf, static_cast<size_t>(n));
    return got.size() >= want.size();
  }));
  EXPECT_EQ(got, want);
}

// ---------------------------------------------------------------------------
// TLS

}  // namespace
}  // namespace quiver::control::rpc
