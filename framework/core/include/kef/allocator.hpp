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

// The size in bytes of the latest allocation made by kef's code that failed, forgotten once read; 0
// when none failed since the last call. Eigen allocates with std::malloc and throws a std::bad_alloc
// that carries no size, so the size is caught where the memory is asked for: libkef, and every program
// and plugin linked against it (the command, the Python module, the plugins, through kef::framework's
// link options), is linked with `--wrap` for malloc, realloc and the throwing forms of operator new and
// new[], whose wrappers in libkef record a failed request. An allocation made inside another library
// (libstdc++'s own, OpenBLAS's) is not seen. Process-wide, not per thread: a bad_alloc raised in a
// worker thread is handled on the thread that waits for it.
double take_failed_allocation_bytes();

}  // namespace kef
