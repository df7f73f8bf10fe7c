// This thread's random engine, seeded once from std::random_device: for ids,
// temporary names and pauses, never for secrets (secret.h reads the kernel).
#pragma once

#include <random>

namespace swarm {

// Made on a thread's first call, on the heap: a thread that never asks (nats.c
// starts several in every process) pays nothing, where a thread_local engine
// would be zeroed into each thread's static TLS (2.5 KB each) at its start.
std::mt19937_64& thread_random();

}  // namespace swarm
