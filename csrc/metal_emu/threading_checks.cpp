// Checks that the emulated Metal runtime threads the way Metal does (RULES.md): completed
// handlers on a completion thread of their own, waitUntilCompleted after the handlers, and
// maxCommandBufferCount. Each check is done through metal-cpp, as our code would.
#include <Metal/Metal.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "metal_emu/emu_hooks.h"

extern "C" MTL::Device* MTLCreateSystemDefaultDevice();

namespace tmps::emu {
namespace {

using namespace std::chrono_literals;

bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// A handler that blocks must not keep the queue from executing the next command buffer.
std::string handler_blocks_only_handlers(MTL::CommandQueue* queue) {
  MTL::CommandBuffer* first = queue->commandBuffer()->retain();
  MTL::CommandBuffer* second = queue->commandBuffer()->retain();
  auto seen = std::make_shared<std::atomic<bool>>(false);
  first->addCompletedHandler([second, seen](MTL::CommandBuffer*) {
    *seen = wait_for([&] { return second->status() >= MTL::CommandBufferStatusCompleted; }, 2000ms);
  });
  first->commit();
  second->commit();
  second->waitUntilCompleted();
  first->waitUntilCompleted();
  first->release();
  second->release();
  return *seen ? "" : "the next command buffer did not execute while a completed handler blocked";
}

// waitUntilCompleted returns only once the handlers returned, even when the status is already
// Completed.
std::string wait_after_handlers(MTL::CommandQueue* queue) {
  MTL::CommandBuffer* cb = queue->commandBuffer()->retain();
  auto finished = std::make_shared<std::atomic<bool>>(false);
  cb->addCompletedHandler([finished](MTL::CommandBuffer*) {
    std::this_thread::sleep_for(200ms);
    *finished = true;
  });
  cb->commit();
  wait_for([&] { return cb->status() >= MTL::CommandBufferStatusCompleted; }, 2000ms);
  cb->waitUntilCompleted();
  const bool ok = *finished;
  cb->release();
  return ok ? "" : "waitUntilCompleted returned before the completed handler returned";
}

// The 65th uncompleted command buffer of a queue waits until one completes.
std::string max_command_buffer_count(MTL::CommandQueue* queue) {
  std::vector<MTL::CommandBuffer*> held;
  for (int i = 0; i < 64; ++i) held.push_back(queue->commandBuffer()->retain());
  std::atomic<bool> made{false};
  std::thread extra([&] {
    NS::AutoreleasePool* pool = NS::AutoreleasePool::alloc()->init();
    queue->commandBuffer();
    made = true;
    pool->release();
  });
  std::this_thread::sleep_for(200ms);
  const bool blocked = !made;
  held[0]->commit();
  held[0]->waitUntilCompleted();
  const bool resumed = wait_for([&] { return made.load(); }, 5000ms);
  extra.join();
  for (MTL::CommandBuffer* cb : held) cb->release();
  if (!blocked) return "commandBuffer returned with 64 uncompleted command buffers on the queue";
  if (!resumed) return "commandBuffer stayed blocked after a command buffer completed";
  return "";
}

}  // namespace

std::string hook_threading_check(const std::string& name) {
  MTL::Device* device = MTLCreateSystemDefaultDevice();
  NS::AutoreleasePool* pool = NS::AutoreleasePool::alloc()->init();
  MTL::CommandQueue* queue = device->newCommandQueue();
  std::string result;
  try {
    if (name == "handler_blocks_only_handlers")
      result = handler_blocks_only_handlers(queue);
    else if (name == "wait_after_handlers")
      result = wait_after_handlers(queue);
    else if (name == "max_command_buffer_count")
      result = max_command_buffer_count(queue);
    else
      throw std::invalid_argument("unknown threading check '" + name + "'");
  } catch (...) {
    queue->release();
    pool->release();
    device->release();
    throw;
  }
  queue->release();
  pool->release();
  device->release();
  return result;
}

}  // namespace tmps::emu
