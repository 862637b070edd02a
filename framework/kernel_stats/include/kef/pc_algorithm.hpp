#pragma once
// The PC algorithm for causal structure discovery (Spirtes, Glymour & Scheines 2000) in its
// order-independent "stable" form (Colombo & Maathuis 2014): the skeleton from conditional
// independence tests on growing conditioning sets, then the v-structures, then Meek's rules R1–R3,
// giving a CPDAG (the Markov equivalence class). Flaxman et al. (2016) run it with HSIC tests whose
// bandwidths come from Bayesian kernel learning (docs/math.md §9). Also here: the CPDAG of a known
// DAG and the structural Hamming distance, to score a discovered graph against the truth.
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kef/types.hpp"

namespace kef {

// A partially directed graph: mark(i, j) && mark(j, i) is the undirected edge i − j, mark(i, j) alone
// the directed edge i → j, neither no edge.
class PartialGraph {
 public:
  explicit PartialGraph(Index nodes = 0);
  static PartialGraph complete(Index nodes);  // every pair joined by an undirected edge

  Index nodes() const { return n_; }
  bool mark(Index i, Index j) const { return marks_[static_cast<std::size_t>(i * n_ + j)] != 0; }
  void set_mark(Index i, Index j, bool on) { marks_[static_cast<std::size_t>(i * n_ + j)] = on ? 1 : 0; }
  bool adjacent(Index i, Index j) const { return mark(i, j) || mark(j, i); }
  bool undirected(Index i, Index j) const { return mark(i, j) && mark(j, i); }
  bool directed(Index i, Index j) const { return mark(i, j) && !mark(j, i); }  // i → j
  void add_directed(Index i, Index j);                                         // i → j
  void add_undirected(Index i, Index j);                                       // i − j
  void remove_edge(Index i, Index j);
  std::vector<Index> neighbours(Index i) const;  // every node adjacent to i, ascending

  // "0 -> 1; 1 - 2" (or with names), pairs in ascending order: for reports and test messages.
  std::string to_string(const std::vector<std::string>& names = {}) const;
  bool operator==(const PartialGraph& other) const = default;

 private:
  Index n_ = 0;
  std::vector<unsigned char> marks_;
};

// The p-value of the hypothesis X_i ⟂ X_j | X_given (given sorted ascending).
using IndependenceTest = std::function<double(Index i, Index j, const std::vector<Index>& given)>;

struct PcOptions {
  double alpha = 0.05;   // an independence is accepted (the edge removed) when p > alpha
  Index max_given = -1;  // the largest conditioning set tried; -1: no limit
};

struct PcResult {
  PartialGraph cpdag;
  PartialGraph skeleton;                                             // before orientation
  std::map<std::pair<Index, Index>, std::vector<Index>> separating;  // (i < j) → the set that separated them
  Index tests = 0;                                                   // independence tests run
  // V-structures the tests implied that contradict one already oriented (left as first oriented).
  Index conflicts = 0;
};

// PC-stable: at each level the adjacency sets are frozen before any edge is removed, so the skeleton
// does not depend on the order of the variables; pairs and conditioning sets are visited in
// ascending order, so the result depends only on the tests' answers. ConfigError for nodes < 1 or
// alpha outside (0, 1); a test returning a non-finite p-value is a NumericalError naming i, j and the set.
PcResult pc_algorithm(Index nodes, const IndependenceTest& test, const PcOptions& options = {});

// Meek's rules R1–R3 applied until nothing changes (orients undirected edges whose direction every
// member of the equivalence class shares).
void apply_meek_rules(PartialGraph& graph);

// The CPDAG of a DAG (dag.directed(i, j) for each edge i → j): its skeleton, its v-structures, then
// Meek's rules. ConfigError when the graph has an undirected edge or a cycle.
PartialGraph cpdag_of_dag(const PartialGraph& dag);

// The number of node pairs whose edges differ (absent, i → j, j → i, i − j): 0 for equal graphs.
Index structural_hamming_distance(const PartialGraph& a, const PartialGraph& b);

}  // namespace kef
