// Launcher: argument validation, binding layout, scalar packing, Metal limits, batching, errors.
#include <gtest/gtest.h>

#include <cstddef>
#include <thread>

#include "fake_device.h"
#include "launcher.h"

using namespace tmps;
using namespace tmps_test;

namespace {

std::shared_ptr<RawBuffer> make_buffer(FakeDevice& dev, size_t bytes) { return dev.new_buffer(bytes); }

// add(x, y, out, n): declared out of binding order to check that the launcher sorts by index.
std::shared_ptr<Pipeline> add_kernel(uint32_t max_threads = 1024, uint32_t static_tg = 0) {
  return std::make_shared<FakePipeline>(
      "add",
      std::vector<ParamInfo>{constant_ref("n", 3), device_ptr("x", 0), device_ptr("y", 1), device_ptr("out", 2)},
      max_threads, static_tg);
}

std::vector<Arg> add_args(FakeDevice& dev) {
  return {buffer_arg(make_buffer(dev, 64), 16), buffer_arg(make_buffer(dev, 64)), buffer_arg(make_buffer(dev, 64), 4),
          scalar_arg<int32_t>(10)};
}

size_t dispatch_count(FakeDevice& dev) {
  size_t n = 0;
  for (auto& b : dev.batches()) n += b->dispatches.size();
  return n;
}

template <typename E>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("WRONG EXCEPTION TYPE: ") + e.what();
  }
  return "NO EXCEPTION";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(Launcher, BindsInIndexOrderWithOffsets) {
  auto dev = std::make_shared<FakeDevice>();
  Launcher s(dev);
  auto args = add_args(*dev);
  LaunchConfig cfg;
  cfg.threadgroups = {4, 1, 1};
  cfg.threads_per_group = {128, 1, 1};
  s.launch(add_kernel(), args, cfg);
  EXPECT_EQ(s.pending(), 1u);
  auto batches = dev->batches();
  ASSERT_EQ(batches.size(), 1u);
  ASSERT_EQ(batches[0]->dispatches.size(), 1u);
  const Dispatch& d = batches[0]->dispatches[0];
  ASSERT_EQ(d.bindings.size(), 4u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(d.bindings[i].kind, Binding::Kind::Buffer);
    EXPECT_EQ(d.bindings[i].index, i);
    EXPECT_EQ(d.bindings[i].buffer, args[i].buffer);
  }
  EXPECT_EQ(d.bindings[0].offset, 16u);
  EXPECT_EQ(d.bindings[2].offset, 4u);
  EXPECT_EQ(d.bindings[3].kind, Binding::Kind::Bytes);
  EXPECT_EQ(d.bindings[3].index, 3u);
  ASSERT_EQ(d.bindings[3].bytes.size(), 4u);
  int32_t n = 0;
  std::memcpy(&n, d.bindings[3].bytes.data(), 4);
  EXPECT_EQ(n, 10);
  EXPECT_EQ(d.threadgroups, (std::array<uint32_t, 3>{4, 1, 1}));
  EXPECT_EQ(d.threads_per_group, (std::array<uint32_t, 3>{128, 1, 1}));
  s.synchronize();
  EXPECT_EQ(s.pending(), 0u);
}

TEST(Launcher, BufferMayHoldAConstantScalar) {
  auto dev = std::make_shared<FakeDevice>();
  Launcher s(dev);
  auto args = add_args(*dev);
  args[3] = buffer_arg(make_buffer(*dev, 8), 4);  // exactly 4 bytes left: fits an int
  s.launch(add_kernel(), args, LaunchConfig{});
  EXPECT_EQ(s.pending(), 1u);

  args[3] = buffer_arg(make_buffer(*dev, 8), 6);  // 2 bytes left: too small
  std::string m = message_of<InvalidArgument>([&] { s.launch(add_kernel(), args, LaunchConfig{}); });
  EXPECT_TRUE(contains(m, "kernel 'add'")) << m;
  EXPECT_TRUE(contains(m, "'n'")) << m;
  EXPECT_TRUE(contains(m, "needs 4 bytes")) << m;
  EXPECT_EQ(s.pending(), 1u);
}

TEST(Launcher, WrongCountNamesParameters) {
  auto dev = std::make_shared<FakeDevice>();
  Launcher s(dev);
  auto args = add_args(*dev);
  args.pop_back();
  std::string m = message_of<InvalidArgument>([&] { s.launch(add_kernel(), args, LaunchConfig{}); });
  EXPECT_EQ(m, "kernel 'add' takes 4 buffer arguments (x, y, out, n), got 3");
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_EQ(dispatch_count(*dev), 0u);
}

TEST(Launcher, ScalarForDevicePointerIsRejected) {
  auto dev = std::make_shared<FakeDevice>();
  Launcher s(dev);
  auto args = add_args(*dev);
  args[1] = scalar_arg<float>(1.0f);
  std::string m = message_of<InvalidArgument>([&] { s.launch(add_kernel(), args, LaunchConfig{}); });
  EXPECT_TRUE(contains(m, "kernel 'add'")) << m;
  EXPECT_TRUE(contains(m, "'y'")) << m;
  EXPECT_TRUE(contains(m, "device")) << m;
  EXPECT_EQ(dispatch_count(*dev), 0u);
}

TEST(Launcher, ScalarSizeMustMatchType) {
  auto dev = std::make_shared<FakeDevice>();
  Launcher s(dev);
  auto args = add_args(*dev);
  args[3] = scalar_arg<int64_t>(10);
  std::string m = message_of<InvalidArgument>([&] { s.launch(add_kernel(), args, LaunchConfig{}); });
  EXPECT_TRUE(contains(m, "'n'") && contains(m, "takes 4 bytes") && contains(m, "has 8")) << m;
  EXPECT_EQ(dispatch_count(*dev), 0u);
}

TEST(Launcher, OffsetsMustLieInsideTheBuffer) {
  auto dev = std::make_shared<FakeDevice>();
  Launcher s(dev);
  auto args = add_args(*dev);
  args[0].offset = 65;
  std::string m = message_of<InvalidArgument>([&] { s.launch(add_kernel(), args, LaunchConfig{}); });
  EXPECT_TRUE(contains(m, "'x'") && contains(m, "offset 65")) << m;
  args[0].offset = 32;
  args[0].size = 40;  // 32 + 40 > 64
  m = message_of<InvalidArgument>([&] { s.launch(add_kernel(), args, LaunchConfig{}); });
  EXPECT_TRUE(contains(m, "'x'") && contains(m, "exceeds")) << m;
  args[0].size = 0;
  args[0].buffer = nullptr;
  m = message_of<InvalidArgument>([&] { s.launch(add_kernel(), args, LaunchConfig{}); });
  EXPECT_TRUE(contains(m, "no buffer")) << m;
  EXPECT_EQ(dispatch_count(*dev), 0u);
}

TEST(Launcher, MetalRefusesAnOffsetAtTheEndOfItsBuffer) {
  // Metal's API validation wants an offset below the buffer's length; the simulator binds an
  // empty view at the end. build_dispatch checks it for a Metal device (the device only asserts).
  auto dev = std::make_shared<FakeDevice>();
  Launcher s(dev);
  auto args = add_args(*dev);
  args[0].offset = 64;
  s.launch(add_kernel(), args, LaunchConfig{});
  EXPECT_EQ(s.pending(), 1u);
  dev->mutable_info().is_simulator = false;
  std::string m = message_of<InvalidArgument>([&] { s.launch(add_kernel(), args, LaunchConfig{}); });
  EXPECT_TRUE(contains(m, "kernel 'add'") && contains(m, "'x'") && contains(m, "offset 64 is not inside the buffer's 64 bytes"))
      << m;
  EXPECT_EQ(s.pending(), 1u);
}

namespace {
// A device that runs only the pipelines it names.
class PickyDevice : public FakeDevice {
 public:
  std::string pipeline_mismatch(const Pipeline& p) const override {
    return p.name() == "add" ? std::string() : "pipeline was built for another device";
  }
};
}  // namespace

TEST(Launcher, RefusesAPipelineTheDeviceCannotRun) {
  auto dev = std::make_shared<PickyDevice>();
  Launcher s(dev);
  auto args = add_args(*dev);
  auto other = std::make_shared<FakePipeline>("other", add_kernel()->params());
  std::string m = message_of<InvalidArgument>([&] { s.launch(other, args, LaunchConfig{}); });
  EXPECT_EQ(m, "kernel 'other': pipeline was built for another device");
  m = message_of<InvalidArgument>([&] { s.prepare(other, args, LaunchConfig{}); });  // the foreign stream's path
  EXPECT_EQ(m, "kernel 'other': pipeline was built for another device");
  EXPECT_EQ(dispatch_count(*dev), 0u);
  s.launch(add_kernel(), args, LaunchConfig{});
  EXPECT_EQ(s.pending(), 1u);
}

TEST(Launcher, ThreadLimits) {
  auto dev = std::make_shared<FakeDevice>();
  Launcher s(dev);
  auto args = add_args(*dev);
  LaunchConfig cfg;
  cfg.threads_per_group = {32, 32, 2};  // 2048
  std::string m = message_of<LimitExceeded>([&] { s.launch(add_kernel(), args, cfg); });
  EXPECT_TRUE(contains(m, "kernel 'add'") && contains(m, "2048") && contains(m, "1024")) << m;

  cfg.threads_per_group = {512, 1, 1};  // fine for Metal, too many for this pipeline
  m = message_of<LimitExceeded>([&] { s.launch(add_kernel(/*max_threads=*/256), args, cfg); });
  EXPECT_TRUE(contains(m, "kernel 'add'") && contains(m, "256")) << m;

  cfg.threads_per_group = {32, 0, 1};  // refused here, not by a layer above (runtime.py, the Triton launcher)
  m = message_of<InvalidArgument>([&] { s.launch(add_kernel(), args, cfg); });
  EXPECT_TRUE(contains(m, "kernel 'add'") && contains(m, "threads must be between 1") && contains(m, "(32, 0, 1)")) << m;

  cfg.threads_per_group = {1024, 1, 1};
  s.launch(add_kernel(), args, cfg);
  EXPECT_EQ(dispatch_count(*dev), 1u);
}

TEST(Launcher, ThreadgroupMemoryLimits) {
  auto dev = std::make_shared<FakeDevice>();
  Launcher s(dev);
  auto pipe = std::make_shared<FakePipeline>(
      "reduce", std::vector<ParamInfo>{device_ptr("x", 0), threadgroup_ptr("scratch", 0)}, 1024, 16384);
  std::vector<Arg> args{buffer_arg(make_buffer(*dev, 64))};
  LaunchConfig cfg;
  // Missing size for [[threadgroup(0)]].
  std::string m = message_of<InvalidArgument>([&] { s.launch(pipe, args, cfg); });
  EXPECT_TRUE(contains(m, "'scratch'")) << m;
  // 16384 static + 16400 dynamic > 32768.
  cfg.threadgroup_memory = {{0, 16400}};
  m = message_of<LimitExceeded>([&] { s.launch(pipe, args, cfg); });
  EXPECT_TRUE(contains(m, "kernel 'reduce'") && contains(m, "32768")) << m;
  EXPECT_EQ(dispatch_count(*dev), 0u);
  // Exactly at the limit is fine; lengths are rounded up to 16 bytes.
  cfg.threadgroup_memory = {{0, 16380}};
  s.launch(pipe, args, cfg);
  auto d = dev->batches().at(0)->dispatches.at(0);
  EXPECT_EQ(d.threadgroup_memory, (std::vector<std::pair<uint32_t, uint32_t>>{{0, 16384}}));
  // A threadgroup index past Metal's (0 to 30) is refused here, for every device (the Metal
  // device only asserts it).
  cfg.threadgroup_memory = {{0, 16}, {31, 16}};
  m = message_of<InvalidArgument>([&] { s.launch(pipe, args, cfg); });
  EXPECT_TRUE(contains(m, "kernel 'reduce'") && contains(m, "threadgroup(31)") && contains(m, "end at 30")) << m;
  EXPECT_EQ(dev->batches().at(0)->dispatches.size(), 1u);
}

TEST(Launcher, TooManyBindingsWithoutPacking) {
  auto dev = std::make_shared<FakeDevice>();
  Launcher s(dev);
  std::vector<ParamInfo> params;
  std::vector<Arg> args;
  for (uint32_t i = 0; i < 33; ++i) {
    params.push_back(i < 20 ? device_ptr("p" + std::to_string(i), i) : constant_ref("s" + std::to_string(i), i));
    args.push_back(i < 20 ? buffer_arg(make_buffer(*dev, 16)) : scalar_arg<int32_t>(int32_t(i)));
  }
  auto pipe = std::make_shared<FakePipeline>("wide", params);
  std::string m = message_of<LimitExceeded>([&] { s.launch(pipe, args, LaunchConfig{}); });
  EXPECT_TRUE(contains(m, "kernel 'wide'") && contains(m, "33") && contains(m, "31")) << m;
  EXPECT_EQ(dispatch_count(*dev), 0u);
}

// The layout the compiler can rely on: a C struct of the scalars in argument order.
struct PackedExpected {
  int8_t a;
  int32_t b;
  int64_t c;
  uint16_t d;
  float e;
  uint8_t f;
  double g;
  int32_t h;
};

TEST(Launcher, PacksScalarsLikeACStruct) {
  auto dev = std::make_shared<FakeDevice>();
  Launcher s(dev);
  // 30 buffers at indices 0..29 and the packed struct at 30: 31 bindings for 38 arguments.
  std::vector<ParamInfo> params;
  for (uint32_t i = 0; i < 30; ++i) params.push_back(device_ptr("p" + std::to_string(i), i));
  params.push_back(constant_ref("args", 30, "Args", sizeof(PackedExpected)));
  auto pipe = std::make_shared<FakePipeline>("wide", params);

  std::vector<std::shared_ptr<RawBuffer>> bufs;
  for (int i = 0; i < 30; ++i) bufs.push_back(make_buffer(*dev, 16));
  std::vector<Arg> scalars{scalar_arg<int8_t>(-3),          scalar_arg<int32_t>(123456),  scalar_arg<int64_t>(-7),
                           scalar_arg<uint16_t>(0x3c00),    scalar_arg<float>(2.5f),      scalar_arg<uint8_t>(9),
                           scalar_arg<double>(1.25),        scalar_arg<int32_t>(-1)};
  // Interleave: buffer, scalar, buffer, scalar, ... then the remaining buffers.
  std::vector<Arg> args;
  size_t bi = 0;
  for (size_t k = 0; k < scalars.size(); ++k) {
    args.push_back(buffer_arg(bufs[bi++], k * 4 % 16));
    args.push_back(scalars[k]);
  }
  while (bi < bufs.size()) args.push_back(buffer_arg(bufs[bi++]));
  ASSERT_EQ(args.size(), 38u);

  LaunchConfig cfg;
  cfg.pack_scalars_at = 30;
  s.launch(pipe, args, cfg);
  const Dispatch& d = dev->batches().at(0)->dispatches.at(0);
  ASSERT_EQ(d.bindings.size(), 31u);
  for (uint32_t i = 0; i < 30; ++i) {
    EXPECT_EQ(d.bindings[i].kind, Binding::Kind::Buffer);
    EXPECT_EQ(d.bindings[i].index, i);
    EXPECT_EQ(d.bindings[i].buffer, bufs[i]) << "buffers keep their order";
  }
  EXPECT_EQ(d.bindings[1].offset, 4u);
  const Binding& packed = d.bindings[30];
  EXPECT_EQ(packed.kind, Binding::Kind::Bytes);
  EXPECT_EQ(packed.index, 30u);
  ASSERT_EQ(packed.bytes.size(), sizeof(PackedExpected));

  auto at = [&](size_t off, auto value) {
    decltype(value) got;
    std::memcpy(&got, packed.bytes.data() + off, sizeof(got));
    return got == value;
  };
  EXPECT_TRUE(at(offsetof(PackedExpected, a), int8_t(-3)));
  EXPECT_TRUE(at(offsetof(PackedExpected, b), int32_t(123456)));
  EXPECT_TRUE(at(offsetof(PackedExpected, c), int64_t(-7)));
  EXPECT_TRUE(at(offsetof(PackedExpected, d), uint16_t(0x3c00)));
  EXPECT_TRUE(at(offsetof(PackedExpected, e), 2.5f));
  EXPECT_TRUE(at(offsetof(PackedExpected, f), uint8_t(9)));
  EXPECT_TRUE(at(offsetof(PackedExpected, g), 1.25));
  EXPECT_TRUE(at(offsetof(PackedExpected, h), int32_t(-1)));
  // Padding is zero (bytes 1..3 between a and b).
  EXPECT_EQ(packed.bytes[1], 0);
  EXPECT_EQ(packed.bytes[3], 0);
}

TEST(Launcher, PackingErrors) {
  auto dev = std::make_shared<FakeDevice>();
  Launcher s(dev);
  auto pipe = std::make_shared<FakePipeline>(
      "k", std::vector<ParamInfo>{device_ptr("x", 0), constant_ref("args", 1, "Args", 16)});
  LaunchConfig cfg;
  cfg.pack_scalars_at = 1;
  auto buf = make_buffer(*dev, 16);
  // Struct size mismatch: one int packs to 4 bytes, the kernel's Args is 16.
  std::string m = message_of<InvalidArgument>([&] { s.launch(pipe, {buffer_arg(buf), scalar_arg<int32_t>(1)}, cfg); });
  EXPECT_TRUE(contains(m, "'args'") && contains(m, "4 bytes") && contains(m, "16")) << m;
  // Wrong number of buffers.
  m = message_of<InvalidArgument>([&] { s.launch(pipe, {scalar_arg<int64_t>(1), scalar_arg<int64_t>(2)}, cfg); });
  EXPECT_TRUE(contains(m, "takes 1 buffer arguments (x)") && contains(m, "got 0")) << m;
  // No parameter at the packing index.
  cfg.pack_scalars_at = 5;
  m = message_of<InvalidArgument>([&] { s.launch(pipe, {buffer_arg(buf), scalar_arg<int64_t>(1)}, cfg); });
  EXPECT_TRUE(contains(m, "buffer(5)")) << m;
  EXPECT_EQ(dispatch_count(*dev), 0u);
  // The right layout goes through.
  cfg.pack_scalars_at = 1;
  s.launch(pipe, {buffer_arg(buf), scalar_arg<int32_t>(1), scalar_arg<int64_t>(2)}, cfg);
  EXPECT_EQ(dispatch_count(*dev), 1u);
}

TEST(Launcher, BatchesCommitAtThreshold) {
  auto dev = std::make_shared<FakeDevice>();
  Launcher s(dev);
  s.set_commit_threshold(3);
  auto args = add_args(*dev);
  for (int i = 0; i < 7; ++i) s.launch(add_kernel(), args, LaunchConfig{});
  EXPECT_EQ(s.pending(), 1u);
  auto batches = dev->batches();
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_TRUE(batches[0]->committed);
  EXPECT_TRUE(batches[1]->committed);
  EXPECT_FALSE(batches[2]->committed);
  EXPECT_FALSE(batches[0]->waited) << "commit never waits";
  EXPECT_EQ(batches[0]->dispatches.size(), 3u);

  s.synchronize();
  EXPECT_EQ(s.pending(), 0u);
  for (auto& b : batches) EXPECT_TRUE(b->committed && b->waited);
  EXPECT_LT(batches[0]->wait_order, batches[1]->wait_order);
  EXPECT_LT(batches[1]->wait_order, batches[2]->wait_order);

  s.launch(add_kernel(), args, LaunchConfig{});
  s.commit();
  EXPECT_EQ(s.pending(), 0u);
  EXPECT_TRUE(dev->batches().back()->committed);
  EXPECT_FALSE(dev->batches().back()->waited);
  s.synchronize();
  EXPECT_TRUE(dev->batches().back()->waited);
}

TEST(Launcher, DispatchErrorRethrownOnceAndStreamReusable) {
  auto dev = std::make_shared<FakeDevice>();
  Launcher s(dev);
  s.set_commit_threshold(1);
  auto args = add_args(*dev);
  dev->fail_next_batches = 1;
  auto t1 = s.launch(add_kernel(), args, LaunchConfig{}, /*timed=*/true);  // fails
  auto t2 = s.launch(add_kernel(), args, LaunchConfig{}, /*timed=*/true);  // fine
  EXPECT_THROW(s.synchronize(), DispatchError);
  EXPECT_TRUE(dev->batches().at(1)->waited) << "later batches are still waited for";
  EXPECT_TRUE(t1->ready);
  EXPECT_FALSE(t1->error.empty());
  EXPECT_TRUE(t2->ready);
  EXPECT_TRUE(t2->error.empty());
  EXPECT_NO_THROW(s.synchronize()) << "reported once";
  s.launch(add_kernel(), args, LaunchConfig{});
  EXPECT_NO_THROW(s.synchronize());
  EXPECT_EQ(dispatch_count(*dev), 3u);
}

TEST(Launcher, TimedLaunchAndEmptyGrid) {
  auto dev = std::make_shared<FakeDevice>();
  Launcher s(dev);
  auto args = add_args(*dev);
  auto none = s.launch(add_kernel(), args, LaunchConfig{});
  EXPECT_EQ(none, nullptr);
  auto t = s.launch(add_kernel(), args, LaunchConfig{}, true);
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->ready);
  s.synchronize();
  EXPECT_TRUE(t->ready);

  LaunchConfig empty;
  empty.threadgroups = {0, 1, 1};
  size_t before = dispatch_count(*dev);
  s.launch(add_kernel(), args, empty);
  EXPECT_EQ(dispatch_count(*dev), before) << "an empty grid encodes nothing";
  // ...but it is still validated.
  args.pop_back();
  EXPECT_THROW(s.launch(add_kernel(), args, empty), InvalidArgument);
}

TEST(Launcher, ConcurrentLaunches) {
  auto dev = std::make_shared<FakeDevice>();
  Launcher s(dev);
  s.set_commit_threshold(16);
  auto pipe = add_kernel();
  auto args = add_args(*dev);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 250; ++i) s.launch(pipe, args, LaunchConfig{});
    });
  }
  for (auto& t : threads) t.join();
  s.synchronize();
  EXPECT_EQ(dispatch_count(*dev), 1000u);
  for (auto& b : dev->batches()) {
    EXPECT_TRUE(b->waited);
    EXPECT_LE(b->dispatches.size(), 16u);
  }
}
