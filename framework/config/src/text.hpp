#pragma once
// Private: the text helpers of the host's messages (lists, "did you mean").
#include <string>
#include <string_view>
#include <vector>

namespace kef::detail {

std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");
// Levenshtein distance, for suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b);
// The candidate closest to `word` if within two edits (and not `word` itself), else empty.
std::string closest(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace kef::detail
