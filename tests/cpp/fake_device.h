// A fake tmps::Device for unit tests of the layers above the backends (pool, pipeline cache,
// launcher). Buffers are heap memory; allocations are counted and can be made to fail;
// pipelines carry whatever parameters a test sets; batches record what was encoded and can be
// made to fail. Thread-safe.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "device.h"
#include "launcher.h"

namespace tmps_test {

using namespace tmps;

class FakePipeline : public Pipeline {
 public:
  FakePipeline(std::string name, std::vector<ParamInfo> params, uint32_t max_threads = 1024,
               uint32_t static_tg_memory = 0)
      : name_(std::move(name)), params_(std::move(params)), max_threads_(max_threads),
        static_tg_memory_(static_tg_memory) {}
  const std::string& name() const override { return name_; }
  const std::vector<ParamInfo>& params() const override { return params_; }
  uint32_t max_total_threads_per_threadgroup() const override { return max_threads_; }
  uint32_t thread_execution_width() const override { return 32; }
  uint32_t static_threadgroup_memory() const override { return static_tg_memory_; }
  uint32_t source_line() const override { return 1; }

 private:
  std::string name_;
  std::vector<ParamInfo> params_;
  uint32_t max_threads_;
  uint32_t static_tg_memory_;
};

// Parameter builders: device pointer, constant reference (scalar), threadgroup pointer.
inline ParamInfo device_ptr(const std::string& name, uint32_t index, const std::string& type = "float",
                            uint64_t type_size = 4) {
  ParamInfo p;
  p.name = name;
  p.type = type;
  p.attribute = "buffer(" + std::to_string(index) + ")";
  p.kind = ParamInfo::Kind::Buffer;
  p.space = ParamInfo::Space::Device;
  p.index = index;
  p.is_pointer = true;
  p.type_size = type_size;
  p.line = 10 + index;
  return p;
}

inline ParamInfo constant_ref(const std::string& name, uint32_t index, const std::string& type = "int",
                              uint64_t type_size = 4) {
  ParamInfo p = device_ptr(name, index, type, type_size);
  p.space = ParamInfo::Space::Constant;
  p.is_pointer = false;
  return p;
}

inline ParamInfo threadgroup_ptr(const std::string& name, uint32_t index) {
  ParamInfo p;
  p.name = name;
  p.type = "float";
  p.attribute = "threadgroup(" + std::to_string(index) + ")";
  p.kind = ParamInfo::Kind::Threadgroup;
  p.space = ParamInfo::Space::Threadgroup;
  p.index = index;
  p.is_pointer = true;
  p.type_size = 4;
  return p;
}

class FakeBuffer : public RawBuffer {
 public:
  FakeBuffer(size_t bytes, std::atomic<int64_t>* live) : data_(bytes ? bytes : 1), size_(bytes), live_(live) {
    ++*live_;
  }
  ~FakeBuffer() override { --*live_; }
  void* contents() override { return data_.data(); }
  size_t length() const override { return size_; }
  void* native_handle() override { return data_.data(); }

 private:
  std::vector<uint8_t> data_;
  size_t size_;
  std::atomic<int64_t>* live_;
};

// What one batch saw, kept by the device so tests can inspect it after the batch is gone.
struct BatchRecord {
  std::vector<Dispatch> dispatches;
  bool committed = false;
  bool waited = false;
  int commit_order = -1;  // order among all commits on this device
  int wait_order = -1;
};

class FakeDevice;

class FakeBatch : public Batch {
 public:
  FakeBatch(FakeDevice* dev, std::shared_ptr<BatchRecord> rec, std::string fail_message)
      : dev_(dev), rec_(std::move(rec)), fail_message_(std::move(fail_message)) {}
  void encode(const Dispatch& d, std::shared_ptr<DispatchTiming> timing) override {
    rec_->dispatches.push_back(d);
    timings_.push_back(std::move(timing));
  }
  size_t size() const override { return rec_->dispatches.size(); }
  void commit() override;
  void wait() override;

 private:
  FakeDevice* dev_;
  std::shared_ptr<BatchRecord> rec_;
  std::string fail_message_;
  std::vector<std::shared_ptr<DispatchTiming>> timings_;
};

class FakeDevice : public Device {
 public:
  FakeDevice() {
    info_.name = "fake";
    info_.gpu_family = "apple9";
    info_.generation = 3;
    info_.max_buffer_length = 1ull << 40;
    info_.is_simulator = true;
  }

  // --- configuration ------------------------------------------------------------------------
  DeviceInfo& mutable_info() { return info_; }
  std::atomic<int> fail_allocations{0};       // the next N new_buffer calls throw OutOfMemory
  std::atomic<bool> return_null{false};        // new_buffer returns nullptr instead of throwing
  std::atomic<uint64_t> capacity{0};           // when non-zero: fail if live bytes would exceed it
  std::string identity = "fake:1";
  std::function<std::shared_ptr<Pipeline>(const std::string&, const std::string&, const CompileOptions&)> builder;
  std::atomic<int> build_delay_ms{0};
  std::atomic<int> fail_next_batches{0};       // the next N batches fail in wait()

  // --- observations -------------------------------------------------------------------------
  std::atomic<int64_t> live_buffers{0};
  std::atomic<int64_t> num_new_buffer_calls{0};
  std::atomic<int64_t> num_builds{0};
  std::vector<size_t> allocation_sizes() {
    std::lock_guard<std::mutex> lock(mu_);
    return sizes_;
  }
  std::vector<std::shared_ptr<BatchRecord>> batches() {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_;
  }
  int next_order() { return order_++; }

  // --- Device -------------------------------------------------------------------------------
  const DeviceInfo& info() const override { return info_; }

  std::unique_ptr<RawBuffer> new_buffer(size_t bytes) override {
    ++num_new_buffer_calls;
    if (fail_allocations > 0) {
      --fail_allocations;
      if (return_null) return nullptr;
      throw OutOfMemory("fake device: allocation failed");
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (capacity != 0 && live_bytes_ + bytes > capacity) {
      if (return_null) return nullptr;
      throw OutOfMemory("fake device: over capacity");
    }
    sizes_.push_back(bytes);
    live_bytes_ += bytes;
    return std::make_unique<CountedBuffer>(bytes, this);
  }

  std::unique_ptr<RawBuffer> wrap_host_memory(void*, size_t) override {
    throw InvalidArgument("fake device: wrap_host_memory not supported");
  }

  std::shared_ptr<Pipeline> build_pipeline(const std::string& source, const std::string& entry,
                                           const CompileOptions& options) override {
    ++num_builds;
    if (build_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(build_delay_ms.load()));
    if (builder) return builder(source, entry, options);
    return std::make_shared<FakePipeline>(entry, std::vector<ParamInfo>{});
  }

  std::unique_ptr<Batch> new_batch() override {
    auto rec = std::make_shared<BatchRecord>();
    std::string fail;
    if (fail_next_batches > 0) {
      --fail_next_batches;
      fail = "fake device: dispatch failed";
    }
    std::lock_guard<std::mutex> lock(mu_);
    batches_.push_back(rec);
    return std::make_unique<FakeBatch>(this, rec, fail);
  }

  std::string cache_identity() const override { return identity; }

  uint64_t live_bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return live_bytes_;
  }

 private:
  class CountedBuffer : public FakeBuffer {
   public:
    CountedBuffer(size_t bytes, FakeDevice* dev) : FakeBuffer(bytes, &dev->live_buffers), bytes_(bytes), dev_(dev) {}
    ~CountedBuffer() override {
      std::lock_guard<std::mutex> lock(dev_->mu_);
      dev_->live_bytes_ -= bytes_;
    }

   private:
    size_t bytes_;
    FakeDevice* dev_;
  };

  DeviceInfo info_;
  std::mutex mu_;
  std::vector<size_t> sizes_;
  uint64_t live_bytes_ = 0;
  std::vector<std::shared_ptr<BatchRecord>> batches_;
  std::atomic<int> order_{0};
};

inline void FakeBatch::commit() {
  rec_->committed = true;
  rec_->commit_order = dev_->next_order();
}

inline void FakeBatch::wait() {
  rec_->waited = true;
  rec_->wait_order = dev_->next_order();
  for (auto& t : timings_) {
    if (!t) continue;
    t->ready = true;
    t->start_ns = 1;
    t->end_ns = 2;
    if (!fail_message_.empty()) t->error = fail_message_;
  }
  if (!fail_message_.empty()) throw DispatchError(fail_message_);
}

// Argument builders.
inline Arg buffer_arg(std::shared_ptr<RawBuffer> b, uint64_t offset = 0) {
  Arg a;
  a.kind = Arg::Kind::Buffer;
  a.buffer = std::move(b);
  a.offset = offset;
  return a;
}

template <typename T>
Arg scalar_arg(T value) {
  Arg a;
  a.kind = Arg::Kind::Scalar;
  a.bytes.resize(sizeof(T));
  std::memcpy(a.bytes.data(), &value, sizeof(T));
  return a;
}

}  // namespace tmps_test
