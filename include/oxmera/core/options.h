#pragma once
// The guard every oxmera options aggregate carries, so that constructing one positionally either
// means what LibTorch's constructor means or does not compile. C++20 accepts
// `Conv2dOptions(1, 10, 5)` for an aggregate and would read it as stride 1, padding 10,
// dilation 5; with the guard as the first member that is a compile error ("could not convert
// '1' from 'int' to 'ox::NamedFieldsOnly'"), and fields are named instead: `{.stride = 2}`.
// Where LibTorch's constructor takes leading fields (`SGDOptions(lr)`,
// `DataLoaderOptions(batch_size)`) the guard follows them, so those mean what they mean there.

namespace ox {

struct NamedFieldsOnly {
  explicit NamedFieldsOnly() = default;
};

}  // namespace ox

// A member declaration; designated initializers skip it (`{.lr = 0.1, .momentum = 0.9}`).
#define OX_NAMED_FIELDS_ONLY \
  [[no_unique_address]] ::ox::NamedFieldsOnly named_fields_only_ {}
