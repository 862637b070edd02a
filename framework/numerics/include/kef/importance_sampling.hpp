#pragma once
// Importance sampling from a model's normalised base measure q0 (docs/math.md §8): proposals y ~ q0 and
// their log ratios f(y) = log p~(y) − log q0(y) = log r(y), streamed in fixed-size chunks. Shared by
// the log_likelihood evaluator and the estimators that normalise their components (cluster_mixture).
//
// Chunk i always draws from stream.derive(i), whatever the thread count, and chunk summaries are
// reduced in chunk order, so every result is bitwise identical for any number of threads. A time
// budget stops the stream between chunks; the result then uses the longest prefix of chunks that
// all finished (chunks that finished after a gap are discarded), so it equals exactly the result of
// a run with `samples` set to the number of proposals used.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "kef/base_measure.hpp"
#include "kef/byte_codec.hpp"
#include "kef/communicator.hpp"
#include "kef/context.hpp"
#include "kef/distributed_reduce.hpp"
#include "kef/model.hpp"
#include "kef/parallel.hpp"
#include "kef/progress.hpp"
#include "kef/proposal.hpp"
#include "kef/random.hpp"

namespace kef {

// Draws proposals from q0 (or from any Proposal, e.g. a defensive mixture) and returns their log
// ratios log p~(y) − log q(y). NaN or +inf ratios are NumericalErrors naming the proposal; −inf
// (p~ = 0 where q > 0) is a legitimate zero ratio. The model and the base measure or proposal must
// outlive the source.
class ProposalSource {
 public:
  ProposalSource(const Model& model, const BaseMeasure& base, std::string where);
  ProposalSource(const Model& model, const Proposal& proposal, std::string where);
  // n proposals from rng; first_index is the global index of the first (for error messages).
  Vector log_ratios(Index n, RandomStream& rng, Index first_index) const;

 private:
  const Model& model_;
  const BaseMeasure* base_ = nullptr;
  const Proposal* proposal_ = nullptr;
  std::string where_;
};

// Mean and centred second moment of the values r·e^{−shift}, shift = the running maximum of log r.
// Merging rescales the side with the smaller shift (exp of a non-positive number, so nothing
// overflows) and combines by Chan et al.'s pairwise update, which avoids the cancellation of
// E[r²] − E[r]² when the ratios are nearly constant.
struct ShiftedMoments {
  Index n = 0;
  double shift = -std::numeric_limits<double>::infinity();
  double mean = 0.0;  // mean of r·e^{−shift}
  double m2 = 0.0;    // Σ (r·e^{−shift} − mean)²

  static ShiftedMoments of(const Vector& log_r);
  // What a distributed run exchanges (kef/byte_codec.hpp).
  auto fields() { return std::tie(n, shift, mean, m2); }
  void merge(const ShiftedMoments& other);

  bool has_mass() const { return n > 0 && mean > 0.0; }
  double log_mean() const { return shift + std::log(mean); }
  double shifted_variance() const { return n > 1 ? m2 / static_cast<double>(n - 1) : 0.0; }
  // Delta-method standard error of log(mean): sd(r) / (sqrt(n)·mean); a ratio, hence shift-free.
  double log_mean_stderr() const {
    return std::sqrt(shifted_variance()) / (std::sqrt(static_cast<double>(n)) * mean);
  }
  // Kish's effective sample size (Σr)²/Σr² = n² mean² / (m2 + n mean²): how many equally weighted
  // proposals the weighted ones are worth. Far below n means a few proposals carry Ẑ, the sign of a
  // proposal that misses the model's mass (shift-free, like the standard error).
  double effective_sample_size() const {
    const double nd = static_cast<double>(n), s = nd * mean * mean;
    return s > 0.0 ? nd * s / (m2 + s) : 0.0;
  }
};

struct ChunkPlan {
  Index total = 0;       // proposals wanted
  Index chunk_size = 4096;
  double max_seconds = 0.0;  // 0: no time budget
  Progress* progress = nullptr;
  std::string task;      // progress label
};

struct StreamReport {
  Index used = 0;         // proposals in the prefix of whole chunks that was reduced
  bool stopped_early = false;
  double seconds = 0.0;
  double min_log_ratio = std::numeric_limits<double>::infinity();
};

// Runs summarize(chunk, offset, log_r) -> Summary in parallel and reduce(const Summary&) in chunk
// order. Chunks run in waves of a few per thread so that progress is reported and memory holds only
// one wave's summaries, however large the budget. Summary must be encodable (kef/byte_codec.hpp): in
// a distributed run it crosses between processes.
template <class Summary, class Summarize, class Reduce>
StreamReport stream_chunks(const ProposalSource& source, const RandomStream& stream, const ChunkPlan& plan,
                           const Context& context, Summarize&& summarize, Reduce&& reduce) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const Index n_chunks = (plan.total + plan.chunk_size - 1) / plan.chunk_size;
  // Distributed over the processes of the run (kef/distributed_reduce.hpp): each takes consecutive
  // chunks of every wave, and the chunks' summaries, minima and completion flags are exchanged, so every
  // process reduces the same chunks in the same order.
  const Communicator& comm = context.communicator();
  const bool distributed = comm.size() > 1 && !detail::in_parallel_body();
  const int ranks = distributed ? comm.size() : 1;
  const Index wave = 16 * static_cast<Index>(context.threads()) * ranks;
  const bool timed = plan.max_seconds > 0.0;
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(timed ? plan.max_seconds : 0.0));
  StreamReport report;
  std::atomic<bool> expired{false};
  std::vector<Summary> summaries;
  std::vector<char> done;
  std::vector<double> mins;
  for (Index w0 = 0; w0 < n_chunks && !report.stopped_early; w0 += wave) {
    const Index wn = std::min(wave, n_chunks - w0);
    summaries.assign(static_cast<std::size_t>(wn), Summary{});
    done.assign(static_cast<std::size_t>(wn), 0);
    mins.assign(static_cast<std::size_t>(wn), std::numeric_limits<double>::infinity());
    auto run_chunk = [&](Index j) {
      const Index chunk = w0 + j;
      // Chunk 0 always runs, so a time-limited estimate is never empty.
      if (timed && chunk > 0 && (expired.load(std::memory_order_relaxed) || Clock::now() >= deadline)) {
        expired.store(true, std::memory_order_relaxed);
        return;
      }
      const Index offset = chunk * plan.chunk_size;
      const Index len = std::min(plan.chunk_size, plan.total - offset);
      RandomStream rng = stream.derive(static_cast<std::uint64_t>(chunk));
      const Vector log_r = source.log_ratios(len, rng, offset);
      const auto k = static_cast<std::size_t>(j);
      summaries[k] = summarize(chunk, offset, log_r);
      mins[k] = log_r.minCoeff();
      done[k] = 1;
    };
    if (!distributed) {
      parallel_for(wn, context.threads(), [&](Index j) { run_chunk(j); });
    } else {
      const int rank = comm.rank();
      const Index first = first_group_of_rank(wn, ranks, rank),
                  last = first_group_of_rank(wn, ranks, rank + 1);
      ByteWriter out;
      std::exception_ptr error;
      try {
        parallel_for(last - first, context.threads(), [&](Index j) { run_chunk(first + j); });
        for (Index j = first; j < last; ++j) {
          const auto k = static_cast<std::size_t>(j);
          encode(out, done[k]);
          encode(out, mins[k]);
          encode(out, summaries[k]);
        }
      } catch (...) {
        error = std::current_exception();
      }
      const std::vector<std::string> all = exchange(comm, CollectiveStep::reduce, out.take(), error);
      for (int q = 0; q < ranks; ++q) {
        if (q == rank) continue;
        ByteReader in(all[static_cast<std::size_t>(q)]);
        for (Index j = first_group_of_rank(wn, ranks, q); j < first_group_of_rank(wn, ranks, q + 1); ++j) {
          const auto k = static_cast<std::size_t>(j);
          decode(in, done[k]);
          decode(in, mins[k]);
          decode(in, summaries[k]);
        }
      }
    }
    for (Index j = 0; j < wn; ++j) {
      const auto k = static_cast<std::size_t>(j);
      if (!done[k]) {
        report.stopped_early = true;
        break;
      }
      reduce(summaries[k]);
      report.min_log_ratio = std::min(report.min_log_ratio, mins[k]);
      report.used += std::min(plan.chunk_size, plan.total - (w0 + j) * plan.chunk_size);
    }
    if (plan.progress)
      plan.progress->update(plan.task, static_cast<double>(report.used) / static_cast<double>(plan.total),
                            std::to_string(report.used) + " of " + std::to_string(plan.total) + " proposals");
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return report;
}

// The moments of r over a stream of proposals (the estimate Ẑ and its standard error).
struct MomentsRun {
  ShiftedMoments moments;
  StreamReport report;
};
MomentsRun sample_moments(const ProposalSource& source, const RandomStream& stream, const ChunkPlan& plan,
                          const Context& context);

// All log ratios of a stream (for the percentile of the bias bound).
Vector sample_log_ratios(const ProposalSource& source, const RandomStream& stream, const ChunkPlan& plan,
                         const Context& context, StreamReport* report = nullptr);

// How many proposals have log r <= threshold (for ρ of the bias bound).
Index count_at_most(const ProposalSource& source, const RandomStream& stream, const ChunkPlan& plan,
                    const Context& context, double threshold, StreamReport* report = nullptr);

}  // namespace kef
