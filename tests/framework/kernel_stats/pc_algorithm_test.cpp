// The PC algorithm (kef/pc_algorithm.hpp): with a d-separation oracle as its test it must return the
// CPDAG of the true DAG, which cpdag_of_dag builds independently (skeleton, v-structures, Meek); the
// stable skeleton does not depend on the variables' order; the structural Hamming distance counts
// differing pairs; bad input is refused.
#include "kef/pc_algorithm.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>

#include "kef/error.hpp"
#include "kef/random.hpp"
#include "test_support.hpp"

namespace kef {
namespace {

PartialGraph dag_from(Index n, const std::vector<std::pair<Index, Index>>& edges) {
  PartialGraph g(n);
  for (auto [a, b] : edges) g.add_directed(a, b);
  return g;
}

// d-separation by the moralised ancestral graph (Lauritzen): x ⟂ y | S iff x and y are disconnected
// in the moral graph of the ancestors of {x, y} ∪ S once S is removed. Brute force on purpose: it
// shares no code with the PC algorithm.
bool d_separated(const PartialGraph& dag, Index x, Index y, const std::vector<Index>& given) {
  const Index n = dag.nodes();
  std::vector<char> keep(static_cast<std::size_t>(n), 0);
  std::vector<Index> stack = given;
  stack.push_back(x);
  stack.push_back(y);
  while (!stack.empty()) {
    const Index v = stack.back();
    stack.pop_back();
    if (keep[static_cast<std::size_t>(v)]) continue;
    keep[static_cast<std::size_t>(v)] = 1;
    for (Index u = 0; u < n; ++u)
      if (dag.directed(u, v)) stack.push_back(u);
  }
  std::vector<std::vector<char>> moral(static_cast<std::size_t>(n),
                                       std::vector<char>(static_cast<std::size_t>(n), 0));
  auto join = [&](Index a, Index b) { moral[a][b] = moral[b][a] = 1; };
  for (Index v = 0; v < n; ++v) {
    if (!keep[v]) continue;
    std::vector<Index> parents;
    for (Index u = 0; u < n; ++u)
      if (keep[u] && dag.directed(u, v)) parents.push_back(u);
    for (Index u : parents) join(u, v);
    for (std::size_t a = 0; a < parents.size(); ++a)
      for (std::size_t b = a + 1; b < parents.size(); ++b) join(parents[a], parents[b]);
  }
  std::vector<char> blocked(static_cast<std::size_t>(n), 0), seen(static_cast<std::size_t>(n), 0);
  for (Index s : given) blocked[s] = 1;
  stack = {x};
  while (!stack.empty()) {
    const Index v = stack.back();
    stack.pop_back();
    if (v == y) return false;
    if (seen[v]) continue;
    seen[v] = 1;
    for (Index u = 0; u < n; ++u)
      if (keep[u] && !blocked[u] && moral[v][u]) stack.push_back(u);
  }
  return true;
}

bool acyclic(const PartialGraph& g) {
  const Index n = g.nodes();
  std::vector<int> state(static_cast<std::size_t>(n), 0);  // 0 new, 1 on the stack, 2 done
  std::function<bool(Index)> visit = [&](Index v) {
    state[v] = 1;
    for (Index u = 0; u < n; ++u)
      if (g.directed(v, u) && (state[u] == 1 || (state[u] == 0 && !visit(u)))) return false;
    state[v] = 2;
    return true;
  };
  for (Index v = 0; v < n; ++v)
    if (state[v] == 0 && !visit(v)) return false;
  return true;
}

bool same_v_structures(const PartialGraph& a, const PartialGraph& b) {
  const Index n = a.nodes();
  for (Index i = 0; i < n; ++i)
    for (Index j = i + 1; j < n; ++j) {
      if (a.adjacent(i, j)) continue;
      for (Index k = 0; k < n; ++k)
        if ((a.directed(i, k) && a.directed(j, k)) != (b.directed(i, k) && b.directed(j, k))) return false;
    }
  return true;
}

// The CPDAG by brute force: every orientation of the DAG's skeleton that is acyclic and has the same
// v-structures is Markov equivalent to it (Verma & Pearl); an edge is directed in the CPDAG iff all
// of them orient it the same way.
PartialGraph cpdag_by_enumeration(const PartialGraph& dag) {
  const Index n = dag.nodes();
  std::vector<std::pair<Index, Index>> edges;
  for (Index i = 0; i < n; ++i)
    for (Index j = i + 1; j < n; ++j)
      if (dag.adjacent(i, j)) edges.emplace_back(i, j);
  std::vector<int> forward(edges.size(), 0), backward(edges.size(), 0);
  for (std::uint64_t bits = 0; bits < (std::uint64_t{1} << edges.size()); ++bits) {
    PartialGraph g(n);
    for (std::size_t e = 0; e < edges.size(); ++e) {
      if (bits >> e & 1)
        g.add_directed(edges[e].second, edges[e].first);
      else
        g.add_directed(edges[e].first, edges[e].second);
    }
    if (!acyclic(g) || !same_v_structures(g, dag)) continue;
    for (std::size_t e = 0; e < edges.size(); ++e) ++(bits >> e & 1 ? backward : forward)[e];
  }
  PartialGraph out(n);
  for (std::size_t e = 0; e < edges.size(); ++e) {
    const auto [i, j] = edges[e];
    if (forward[e] && backward[e])
      out.add_undirected(i, j);
    else if (forward[e])
      out.add_directed(i, j);
    else
      out.add_directed(j, i);
  }
  return out;
}

IndependenceTest oracle(const PartialGraph& dag) {
  return [dag](Index i, Index j, const std::vector<Index>& given) {
    return d_separated(dag, i, j, given) ? 1.0 : 0.0;
  };
}

PartialGraph random_dag(Index n, double density, RandomStream& rng) {
  std::vector<Index> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  for (Index i = n - 1; i > 0; --i)
    std::swap(order[i], order[static_cast<Index>(rng.uniform_int(static_cast<std::uint64_t>(i + 1)))]);
  PartialGraph g(n);
  for (Index a = 0; a < n; ++a)
    for (Index b = a + 1; b < n; ++b)
      if (rng.uniform() < density) g.add_directed(order[a], order[b]);
  return g;
}

TEST(PcAlgorithm, KnownGraphs) {
  // A chain a → b → c: its equivalence class leaves every edge undirected.
  const PartialGraph chain = dag_from(3, {{0, 1}, {1, 2}});
  EXPECT_EQ(cpdag_of_dag(chain).to_string(), "0 - 1; 1 - 2");
  EXPECT_EQ(pc_algorithm(3, oracle(chain)).cpdag.to_string(), "0 - 1; 1 - 2");
  // A collider a → c ← b is identified.
  const PartialGraph collider = dag_from(3, {{0, 2}, {1, 2}});
  EXPECT_EQ(pc_algorithm(3, oracle(collider)).cpdag.to_string(), "0 -> 2; 1 -> 2");
  // The sprinkler: cloudy → sprinkler, cloudy → rain, sprinkler → wet, rain → wet, wet → slippery.
  // The v-structure at wet orients wet → slippery by R1; cloudy's edges stay undirected.
  const PartialGraph sprinkler = dag_from(5, {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}});
  const PcResult r = pc_algorithm(5, oracle(sprinkler));
  EXPECT_EQ(r.cpdag.to_string({"cloudy", "sprinkler", "rain", "wet", "slippery"}),
            "cloudy - sprinkler; cloudy - rain; sprinkler -> wet; rain -> wet; wet -> slippery");
  EXPECT_EQ(r.cpdag, cpdag_of_dag(sprinkler));
  EXPECT_EQ(r.conflicts, 0);
  // sprinkler ⟂ rain | cloudy, found at level 1.
  ASSERT_EQ(r.separating.count({1, 2}), 1u);
  EXPECT_EQ(r.separating.at({1, 2}), std::vector<Index>({0}));
  // R2 and R3 cases: a → b → c with a − c gives a → c; Meek's R3 diamond.
  PartialGraph r2(3);
  r2.add_directed(0, 1);
  r2.add_directed(1, 2);
  r2.add_undirected(0, 2);
  apply_meek_rules(r2);
  EXPECT_TRUE(r2.directed(0, 2));
  PartialGraph r3(4);  // 0 − 1, 0 − 2, 0 − 3, 1 → 3, 2 → 3, 1 and 2 not adjacent ⇒ 0 → 3
  r3.add_undirected(0, 1);
  r3.add_undirected(0, 2);
  r3.add_undirected(0, 3);
  r3.add_directed(1, 3);
  r3.add_directed(2, 3);
  apply_meek_rules(r3);
  EXPECT_TRUE(r3.directed(0, 3));
  EXPECT_TRUE(r3.undirected(0, 1));
}

TEST(PcAlgorithm, WithADSeparationOracleRecoversTheCpdagOfRandomDags) {
  RandomStream rng(7, "pc-random-dags");
  Index directed = 0;
  for (int rep = 0; rep < 150; ++rep) {
    const Index n = 3 + static_cast<Index>(rng.uniform_int(6));  // 3 to 8 nodes
    const PartialGraph dag = random_dag(n, 0.2 + 0.3 * rng.uniform(), rng);
    const PartialGraph truth = cpdag_of_dag(dag);
    if (n <= 6) {
      // cpdag_of_dag (v-structures and Meek's rules) against the enumerated equivalence class.
      const PartialGraph enumerated = cpdag_by_enumeration(dag);
      ASSERT_EQ(truth, enumerated) << "DAG " << dag.to_string() << "\nMeek " << truth.to_string()
                                   << "\nenumerated " << enumerated.to_string();
    }
    const PcResult r = pc_algorithm(n, oracle(dag));
    ASSERT_EQ(r.cpdag, truth) << "DAG " << dag.to_string() << "\nPC   " << r.cpdag.to_string() << "\ntruth "
                              << truth.to_string();
    EXPECT_EQ(r.conflicts, 0);
    EXPECT_EQ(structural_hamming_distance(r.cpdag, truth), 0);
    for (Index i = 0; i < n; ++i)
      for (Index j = i + 1; j < n; ++j) directed += truth.directed(i, j) || truth.directed(j, i);
  }
  EXPECT_GT(directed, 100) << "the random DAGs should exercise the orientation rules";
}

TEST(PcAlgorithm, StableSkeletonDoesNotDependOnTheVariablesOrder) {
  // A noisy test that is a fixed function of the variables (not their positions): relabelling the
  // variables must relabel the skeleton, whatever the answers.
  const Index n = 7;
  auto p_value = [](Index a, Index b, std::vector<Index> s) {
    std::sort(s.begin(), s.end());
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&](std::uint64_t v) { h = (h ^ (v + 0x9e3779b97f4a7c15ull)) * 1099511628211ull; };
    mix(static_cast<std::uint64_t>(std::min(a, b)));
    mix(static_cast<std::uint64_t>(std::max(a, b)));
    for (Index v : s) mix(static_cast<std::uint64_t>(v) + 100);
    return static_cast<double>(h % 1000) / 1000.0;  // uniform-ish on [0, 1)
  };
  const PcResult base = pc_algorithm(
      n, [&](Index i, Index j, const std::vector<Index>& s) { return p_value(i, j, s); },
      PcOptions{.alpha = 0.3});
  RandomStream rng(3, "pc-permutations");
  for (int rep = 0; rep < 20; ++rep) {
    std::vector<Index> label(n);  // position → variable
    std::iota(label.begin(), label.end(), 0);
    for (Index i = n - 1; i > 0; --i)
      std::swap(label[i], label[static_cast<Index>(rng.uniform_int(static_cast<std::uint64_t>(i + 1)))]);
    const PcResult r = pc_algorithm(
        n,
        [&](Index i, Index j, const std::vector<Index>& s) {
          std::vector<Index> vars;
          for (Index v : s) vars.push_back(label[v]);
          return p_value(label[i], label[j], vars);
        },
        PcOptions{.alpha = 0.3});
    for (Index i = 0; i < n; ++i) {
      for (Index j = 0; j < n; ++j) {
        if (i != j) {
          ASSERT_EQ(r.skeleton.adjacent(i, j), base.skeleton.adjacent(label[i], label[j])) << "rep " << rep;
        }
      }
    }
  }
}

TEST(PcAlgorithm, HammingDistanceAndBadInput) {
  PartialGraph a(3), b(3);
  a.add_directed(0, 1);
  a.add_undirected(1, 2);
  b.add_directed(1, 0);  // reversed: 1
  b.add_undirected(1, 2);
  b.add_undirected(0, 2);  // extra: 1
  EXPECT_EQ(structural_hamming_distance(a, b), 2);
  EXPECT_EQ(structural_hamming_distance(a, a), 0);
  EXPECT_THROW(structural_hamming_distance(a, PartialGraph(4)), ConfigError);

  EXPECT_TRUE(test::contains(test::message_of<ConfigError>([] { pc_algorithm(0, oracle(PartialGraph(1))); }),
                             "at least one variable"));
  EXPECT_TRUE(test::contains(test::message_of<ConfigError>(
                                 [] { pc_algorithm(2, oracle(PartialGraph(2)), PcOptions{.alpha = 1.5}); }),
                             "alpha must be in (0, 1)"));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(test::contains(test::message_of<NumericalError>([&] {
                               pc_algorithm(2, [&](Index, Index, const std::vector<Index>&) { return nan; });
                             }),
                             "test of 0 and 1 given {} returned a non-finite p-value"));
  PartialGraph cycle = dag_from(3, {{0, 1}, {1, 2}, {2, 0}});
  EXPECT_TRUE(test::contains(test::message_of<ConfigError>([&] { cpdag_of_dag(cycle); }), "directed cycle"));
  PartialGraph und(2);
  und.add_undirected(0, 1);
  EXPECT_TRUE(test::contains(test::message_of<ConfigError>([&] { cpdag_of_dag(und); }), "undirected"));
}

}  // namespace
}  // namespace kef
