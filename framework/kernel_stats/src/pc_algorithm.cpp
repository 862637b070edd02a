// The PC algorithm, stable form (kef/pc_algorithm.hpp).
#include "kef/pc_algorithm.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "kef/error.hpp"

namespace kef {

PartialGraph::PartialGraph(Index nodes) : n_(nodes), marks_(static_cast<std::size_t>(nodes * nodes), 0) {
  if (nodes < 0) throw ConfigError("graph: negative node count " + std::to_string(nodes));
}

PartialGraph PartialGraph::complete(Index nodes) {
  PartialGraph g(nodes);
  for (Index i = 0; i < nodes; ++i)
    for (Index j = 0; j < nodes; ++j)
      if (i != j) g.set_mark(i, j, true);
  return g;
}

void PartialGraph::add_directed(Index i, Index j) {
  set_mark(i, j, true);
  set_mark(j, i, false);
}

void PartialGraph::add_undirected(Index i, Index j) {
  set_mark(i, j, true);
  set_mark(j, i, true);
}

void PartialGraph::remove_edge(Index i, Index j) {
  set_mark(i, j, false);
  set_mark(j, i, false);
}

std::vector<Index> PartialGraph::neighbours(Index i) const {
  std::vector<Index> out;
  for (Index j = 0; j < n_; ++j)
    if (j != i && adjacent(i, j)) out.push_back(j);
  return out;
}

std::string PartialGraph::to_string(const std::vector<std::string>& names) const {
  auto name = [&](Index i) {
    return static_cast<std::size_t>(i) < names.size() ? names[static_cast<std::size_t>(i)]
                                                      : std::to_string(i);
  };
  std::ostringstream out;
  bool first = true;
  for (Index i = 0; i < n_; ++i)
    for (Index j = i + 1; j < n_; ++j) {
      if (!adjacent(i, j)) continue;
      out << (first ? "" : "; ");
      first = false;
      if (undirected(i, j))
        out << name(i) << " - " << name(j);
      else if (directed(i, j))
        out << name(i) << " -> " << name(j);
      else
        out << name(j) << " -> " << name(i);
    }
  return first ? "(no edges)" : out.str();
}

namespace {

// Calls f on every size-k subset of `pool` (ascending) in lexicographic order; stops when f returns true.
template <class F>
bool for_each_subset(const std::vector<Index>& pool, std::size_t k, F&& f) {
  if (k > pool.size()) return false;
  std::vector<std::size_t> idx(k);
  for (std::size_t t = 0; t < k; ++t) idx[t] = t;
  std::vector<Index> subset(k);
  for (;;) {
    for (std::size_t t = 0; t < k; ++t) subset[t] = pool[idx[t]];
    if (f(subset)) return true;
    // Advance to the next combination.
    std::size_t t = k;
    while (t > 0 && idx[t - 1] == pool.size() - k + (t - 1)) --t;
    if (t == 0) return false;
    ++idx[t - 1];
    for (std::size_t u = t; u < k; ++u) idx[u] = idx[u - 1] + 1;
  }
}

std::string set_text(const std::vector<Index>& s) {
  std::string out = "{";
  for (std::size_t t = 0; t < s.size(); ++t) out += (t ? ", " : "") + std::to_string(s[t]);
  return out + "}";
}

// Orients the unshielded triples i − k − j (i, j not adjacent) where `collider(i, j, k)` holds as
// i → k ← j. An edge already oriented the other way keeps its direction (the first orientation
// wins, in ascending order of i, j, k); returns how many such conflicts were seen.
template <class Collider>
Index orient_v_structures(PartialGraph& g, const PartialGraph& skeleton, Collider&& collider) {
  Index conflicts = 0;
  const Index n = g.nodes();
  for (Index i = 0; i < n; ++i)
    for (Index j = i + 1; j < n; ++j) {
      if (skeleton.adjacent(i, j)) continue;
      for (Index k = 0; k < n; ++k) {
        if (k == i || k == j || !skeleton.adjacent(i, k) || !skeleton.adjacent(j, k)) continue;
        if (!collider(i, j, k)) continue;
        for (Index a : {i, j}) {
          if (g.directed(k, a)) {
            ++conflicts;  // k → a already: keep it
            continue;
          }
          g.add_directed(a, k);
        }
      }
    }
  return conflicts;
}

}  // namespace

PcResult pc_algorithm(Index nodes, const IndependenceTest& test, const PcOptions& options) {
  if (nodes < 1) throw ConfigError("pc: expected at least one variable, got " + std::to_string(nodes));
  if (!(options.alpha > 0 && options.alpha < 1))
    throw ConfigError("pc: alpha must be in (0, 1), got " + std::to_string(options.alpha));
  PcResult result;
  PartialGraph g = PartialGraph::complete(nodes);

  for (Index level = 0;; ++level) {
    if (options.max_given >= 0 && level > options.max_given) break;
    // Stable: every node's neighbours as they were when the level started.
    std::vector<std::vector<Index>> frozen(static_cast<std::size_t>(nodes));
    for (Index i = 0; i < nodes; ++i) frozen[static_cast<std::size_t>(i)] = g.neighbours(i);
    bool any = false;
    for (Index i = 0; i < nodes; ++i) {
      for (Index j : frozen[static_cast<std::size_t>(i)]) {
        if (!g.adjacent(i, j)) continue;  // removed earlier in this level
        std::vector<Index> pool;
        for (Index k : frozen[static_cast<std::size_t>(i)])
          if (k != j) pool.push_back(k);
        if (static_cast<Index>(pool.size()) < level) continue;
        any = true;
        for_each_subset(pool, static_cast<std::size_t>(level), [&](const std::vector<Index>& given) {
          const double p = test(i, j, given);
          ++result.tests;
          if (!std::isfinite(p))
            throw NumericalError("pc: the independence test of " + std::to_string(i) + " and " +
                                 std::to_string(j) + " given " + set_text(given) +
                                 " returned a non-finite p-value");
          if (p <= options.alpha) return false;
          g.remove_edge(i, j);
          result.separating[{std::min(i, j), std::max(i, j)}] = given;
          return true;
        });
      }
    }
    if (!any) break;
  }

  result.skeleton = g;
  result.conflicts = orient_v_structures(g, result.skeleton, [&](Index i, Index j, Index k) {
    const auto it = result.separating.find({i, j});
    return it == result.separating.end() ||
           std::find(it->second.begin(), it->second.end(), k) == it->second.end();
  });
  apply_meek_rules(g);
  result.cpdag = g;
  return result;
}

void apply_meek_rules(PartialGraph& g) {
  const Index n = g.nodes();
  for (bool changed = true; changed;) {
    changed = false;
    for (Index b = 0; b < n; ++b)
      for (Index c = 0; c < n; ++c) {
        if (b == c || !g.undirected(b, c)) continue;
        bool orient = false;
        for (Index a = 0; a < n && !orient; ++a) {
          if (a == b || a == c) continue;
          // R1: a → b − c with a, c not adjacent.
          if (g.directed(a, b) && !g.adjacent(a, c)) orient = true;
          // R2: b → a → c with b − c.
          if (g.directed(b, a) && g.directed(a, c)) orient = true;
        }
        // R3: b − d1, b − d2, d1 → c, d2 → c, d1 and d2 not adjacent.
        for (Index d1 = 0; d1 < n && !orient; ++d1) {
          if (d1 == b || d1 == c || !g.undirected(b, d1) || !g.directed(d1, c)) continue;
          for (Index d2 = d1 + 1; d2 < n && !orient; ++d2) {
            if (d2 == b || d2 == c || !g.undirected(b, d2) || !g.directed(d2, c)) continue;
            if (!g.adjacent(d1, d2)) orient = true;
          }
        }
        if (orient) {
          g.add_directed(b, c);
          changed = true;
        }
      }
  }
}

PartialGraph cpdag_of_dag(const PartialGraph& dag) {
  const Index n = dag.nodes();
  PartialGraph skeleton(n);
  for (Index i = 0; i < n; ++i)
    for (Index j = i + 1; j < n; ++j) {
      if (dag.undirected(i, j))
        throw ConfigError("cpdag_of_dag: the edge " + std::to_string(i) + " - " + std::to_string(j) +
                          " is undirected (expected a DAG)");
      if (dag.adjacent(i, j)) skeleton.add_undirected(i, j);
    }
  // Kahn's algorithm: a DAG has a topological order.
  std::vector<Index> indegree(static_cast<std::size_t>(n), 0), ready;
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < n; ++j)
      if (dag.directed(i, j)) ++indegree[static_cast<std::size_t>(j)];
  for (Index i = 0; i < n; ++i)
    if (indegree[static_cast<std::size_t>(i)] == 0) ready.push_back(i);
  Index seen = 0;
  while (!ready.empty()) {
    const Index i = ready.back();
    ready.pop_back();
    ++seen;
    for (Index j = 0; j < n; ++j)
      if (dag.directed(i, j) && --indegree[static_cast<std::size_t>(j)] == 0) ready.push_back(j);
  }
  if (seen != n) throw ConfigError("cpdag_of_dag: the graph has a directed cycle (expected a DAG)");

  PartialGraph g = skeleton;
  orient_v_structures(g, skeleton,
                      [&](Index i, Index j, Index k) { return dag.directed(i, k) && dag.directed(j, k); });
  apply_meek_rules(g);
  return g;
}

Index structural_hamming_distance(const PartialGraph& a, const PartialGraph& b) {
  if (a.nodes() != b.nodes())
    throw ConfigError("structural Hamming distance: graphs on " + std::to_string(a.nodes()) + " and " +
                      std::to_string(b.nodes()) + " nodes");
  Index d = 0;
  for (Index i = 0; i < a.nodes(); ++i)
    for (Index j = i + 1; j < a.nodes(); ++j)
      if (a.mark(i, j) != b.mark(i, j) || a.mark(j, i) != b.mark(j, i)) ++d;
  return d;
}

}  // namespace kef
