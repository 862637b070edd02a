#pragma once
// Ordered reductions across the processes of a distributed run (kef/communicator.hpp) as well as the
// threads of each. The work is cut into groups fixed by the problem (never by the thread or process
// count); process r of K computes the consecutive groups [G·r/K, G·(r+1)/K), each exactly as a single
// process computes it (same boundaries, same order inside the group), then the encoded partials
// (kef/byte_codec.hpp) are exchanged and every process combines all groups in group order. The result
// is therefore bitwise the single-process result on every process, for any K and any thread count.
//
// `fields(partial)` returns a tuple of references to what combine() reads (std::tie(p.sum, p.count)):
// only these cross between processes; a partial's workspace members stay local. With one process
// nothing is encoded and these are ordered_reduce (kef/parallel.hpp) itself; so they are inside the body
// of a parallel_for (a reduction per candidate or per cluster), where the processes could not meet in
// the same order: each process computes every group itself there, with the same result.
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "kef/byte_codec.hpp"
#include "kef/communicator.hpp"
#include "kef/context.hpp"
#include "kef/error.hpp"
#include "kef/parallel.hpp"

namespace kef {

// The first group of process `rank` when `groups` groups are split between `size` processes.
inline Index first_group_of_rank(Index groups, int size, int rank) {
  return groups * static_cast<Index>(rank) / static_cast<Index>(size);
}

// parts[g] for g in [0, groups): init() then compute(g, parts[g]), distributed as described above;
// every process returns all of them (the fields(), for groups other processes computed). An error in
// any process's compute is thrown on every process (the lowest failing group's, as one process would).
template <class Init, class Compute, class Fields>
auto distributed_parts(Index groups, const Context& context, Init&& init, Compute&& compute,
                       Fields&& fields) {
  using Partial = decltype(init());
  std::vector<Partial> parts;
  parts.reserve(static_cast<std::size_t>(groups));
  for (Index g = 0; g < groups; ++g) parts.push_back(init());
  const Communicator& comm = context.communicator();
  const int size = comm.size();
  if (size == 1 || detail::in_parallel_body()) {
    parallel_for(groups, context.threads(), [&](Index g) { compute(g, parts[static_cast<std::size_t>(g)]); });
    return parts;
  }
  const int rank = comm.rank();
  const Index first = first_group_of_rank(groups, size, rank);
  const Index last = first_group_of_rank(groups, size, rank + 1);
  ByteWriter out;
  std::exception_ptr error;
  try {
    parallel_for(last - first, context.threads(),
                 [&](Index j) { compute(first + j, parts[static_cast<std::size_t>(first + j)]); });
    for (Index g = first; g < last; ++g) encode(out, fields(parts[static_cast<std::size_t>(g)]));
  } catch (...) {
    error = std::current_exception();
  }
  const std::vector<std::string> all = exchange(comm, CollectiveStep::reduce, out.take(), error);
  for (int q = 0; q < size; ++q) {
    if (q == rank) continue;
    ByteReader in(all[static_cast<std::size_t>(q)]);
    for (Index g = first_group_of_rank(groups, size, q); g < first_group_of_rank(groups, size, q + 1); ++g)
      decode(in, fields(parts[static_cast<std::size_t>(g)]));
    if (!in.at_end())
      throw Error("distributed reduction: rank " + std::to_string(q) + " sent more than its partials");
  }
  return parts;
}

// The items [first, last) of [0, n) this process accumulates in ordered_reduce(n, context, ...,
// max_groups, ...): all of them on one process or inside a parallel loop body. For work that keeps
// per-item state (a block's derivative stacks) across several reductions over the same items: each
// process keeps only its own items', and every reduction finds them where it needs them.
inline std::pair<Index, Index> own_items(Index n, const Context& context, Index max_groups) {
  const Communicator& comm = context.communicator();
  if (comm.size() == 1 || detail::in_parallel_body()) return {0, n};
  const Index groups = std::max<Index>(1, std::min(n, max_groups));
  const Index g0 = first_group_of_rank(groups, comm.size(), comm.rank());
  const Index g1 = first_group_of_rank(groups, comm.size(), comm.rank() + 1);
  return {g0 * n / groups, g1 * n / groups};
}

// ordered_reduce (kef/parallel.hpp) over the processes and threads of `context`: the same groups, the
// same result on every process, bitwise equal to ordered_reduce(n, context.threads(), ...).
template <class Init, class Accumulate, class Combine, class Fields>
auto ordered_reduce(Index n, const Context& context, Init&& init, Accumulate&& accumulate, Combine&& combine,
                    Index max_groups, Fields&& fields) {
  const Index groups = std::max<Index>(1, std::min(n, max_groups));
  auto parts = distributed_parts(
      groups, context, init,
      [&](Index g, auto& part) {
        for (Index i = g * n / groups; i < (g + 1) * n / groups; ++i) accumulate(i, part);
      },
      fields);
  auto result = std::move(parts[0]);
  for (Index g = 1; g < groups; ++g) combine(result, parts[static_cast<std::size_t>(g)]);
  return result;
}

}  // namespace kef
