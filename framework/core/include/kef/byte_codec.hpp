#pragma once
// Flat binary encoding of the partial results that processes of a distributed run exchange
// (kef/distributed_reduce.hpp). Both ends are the same build on the same kind of machine, so values
// are copied as their bytes: a double arrives bitwise as it left. Encodable: arithmetic values, Eigen
// dense matrices and vectors (shape then entries), std::string (length then bytes), std::vector and
// std::tuple of encodables (a tuple
// of references, std::tie(a, b), encodes the referenced members), and any class with a member
// `fields()` returning such a tuple of its members.
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kef/types.hpp"

namespace kef {

class ByteWriter {
 public:
  void raw(const void* data, std::size_t bytes) { bytes_.append(static_cast<const char*>(data), bytes); }
  std::size_t size() const { return bytes_.size(); }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}
  // Throws kef::Error when fewer than `bytes` remain (the processes disagree on a partial's layout).
  void raw(void* data, std::size_t bytes);
  bool at_end() const { return pos_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
};

namespace detail {
template <class T>
struct IsTuple : std::false_type {};
template <class... Ts>
struct IsTuple<std::tuple<Ts...>> : std::true_type {};
template <class T>
struct IsStdVector : std::false_type {};
template <class T, class A>
struct IsStdVector<std::vector<T, A>> : std::true_type {};
template <class T>
concept HasFields = requires(T& t) {
  t.fields();
};
template <class T>
concept EigenDense = std::is_base_of_v<Eigen::PlainObjectBase<T>, T>;
}  // namespace detail

// Writes `value` (taken by reference: fields() of a class is a non-const member).
template <class T>
void encode(ByteWriter& w, T&& value) {
  using V = std::remove_cvref_t<T>;
  if constexpr (std::is_arithmetic_v<V>) {
    w.raw(&value, sizeof(V));
  } else if constexpr (detail::EigenDense<V>) {
    const std::int64_t shape[2] = {static_cast<std::int64_t>(value.rows()),
                                   static_cast<std::int64_t>(value.cols())};
    w.raw(shape, sizeof shape);
    w.raw(value.data(), sizeof(typename V::Scalar) * static_cast<std::size_t>(value.size()));
  } else if constexpr (std::is_same_v<V, std::string>) {
    const std::int64_t n = static_cast<std::int64_t>(value.size());
    w.raw(&n, sizeof n);
    w.raw(value.data(), value.size());
  } else if constexpr (detail::IsStdVector<V>::value) {
    const std::int64_t n = static_cast<std::int64_t>(value.size());
    w.raw(&n, sizeof n);
    for (auto& item : value) encode(w, item);
  } else if constexpr (detail::IsTuple<V>::value) {
    std::apply([&](auto&... items) { (encode(w, items), ...); }, value);
  } else if constexpr (detail::HasFields<V>) {
    encode(w, const_cast<V&>(value).fields());
  } else {
    static_assert(sizeof(V) == 0, "kef::encode: type not encodable (add a fields() member)");
  }
}

// Reads into `value` (resizing matrices and vectors); a tuple of references reads into the referents.
template <class T>
void decode(ByteReader& r, T&& value) {
  using V = std::remove_cvref_t<T>;
  if constexpr (std::is_arithmetic_v<V>) {
    r.raw(&value, sizeof(V));
  } else if constexpr (detail::EigenDense<V>) {
    std::int64_t shape[2];
    r.raw(shape, sizeof shape);
    value.resize(static_cast<Index>(shape[0]), static_cast<Index>(shape[1]));
    r.raw(value.data(), sizeof(typename V::Scalar) * static_cast<std::size_t>(value.size()));
  } else if constexpr (std::is_same_v<V, std::string>) {
    std::int64_t n = 0;
    r.raw(&n, sizeof n);
    value.resize(static_cast<std::size_t>(n));
    r.raw(value.data(), value.size());
  } else if constexpr (detail::IsStdVector<V>::value) {
    std::int64_t n = 0;
    r.raw(&n, sizeof n);
    value.resize(static_cast<std::size_t>(n));
    for (auto& item : value) decode(r, item);
  } else if constexpr (detail::IsTuple<V>::value) {
    std::apply([&](auto&... items) { (decode(r, items), ...); }, value);
  } else if constexpr (detail::HasFields<V>) {
    decode(r, value.fields());
  } else {
    static_assert(sizeof(V) == 0, "kef::decode: type not decodable (add a fields() member)");
  }
}

}  // namespace kef
