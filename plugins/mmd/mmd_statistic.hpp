#pragma once
// The mmd evaluator's statistic is the framework's kernel two-sample building block
// (kef/mmd_test.hpp, docs/math.md §8.7), which it shares with mmd_two_sample and `kef test two-sample`.
#include "kef/mmd_test.hpp"

namespace kef::mmd {

using kef::mmd_test;
using kef::MmdTest;

}  // namespace kef::mmd
