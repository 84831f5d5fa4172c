// A GGUF metadata value: a scalar, a string or a (non-nested) array of scalars or strings.
// Values own their data (copied out of the mapping at parse time, after validation).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace fluoro::gguf {

// On-disk gguf_type codes; never renumber.
enum class ValueType : uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};
std::string_view value_type_name(ValueType t);

class Value {
  public:
    // Array storage by element kind: integers widened (signed in int64, unsigned in uint64),
    // floats in double, bools, strings. elem_type keeps the on-disk element type.
    using Storage = std::variant<uint64_t, int64_t, double, bool, std::string,
                                 std::vector<uint64_t>, std::vector<int64_t>, std::vector<double>,
                                 std::vector<bool>, std::vector<std::string>>;

    Value() = default;
    Value(ValueType type, ValueType elem_type, Storage storage)
        : type_(type), elem_type_(elem_type), storage_(std::move(storage)) {}

    ValueType type() const { return type_; }
    ValueType elem_type() const { return elem_type_; }  // meaningful for arrays
    bool is_array() const { return type_ == ValueType::Array; }
    size_t array_size() const;
    const Storage& storage() const { return storage_; }

    // Short human text: scalars in full, strings quoted (cut at max_chars), arrays as
    // "[u32 x 30] 1, 2, 3, ..." — used by `fluoro info`.
    std::string to_display(size_t max_chars = 80) const;

  private:
    ValueType type_ = ValueType::U8;
    ValueType elem_type_ = ValueType::U8;
    Storage storage_;
};

}  // namespace fluoro::gguf
