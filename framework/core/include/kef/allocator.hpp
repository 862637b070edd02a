#pragma once
// Process-wide allocator settings for programs that run kef's numerical work.
//
// kef's hot loops allocate and free large temporaries (derivative stacks of tens of MB) many times
// per fit. glibc serves blocks above its mmap threshold (at most 32 MB when adapted dynamically)
// with fresh mmap()s and returns them on free(), so every reuse pays a page fault per 4 KB page:
// measured on the DKEF stage-2 loop, page faults took 3/4 of the run. keep_freed_memory() raises the
// mmap and trim thresholds so freed blocks stay in the heap and are reused.
//
// It changes global malloc behaviour, so the library never calls it by itself: the `kef` command
// and kef's benchmarks do, and an embedding program may (or may set GLIBC_TUNABLES instead).
namespace kef {

// Returns false when the C library does not support the setting (then nothing changed).
bool keep_freed_memory();

}  // namespace kef
