// Philox draws. Element i reads only the words core/philox.h assigns it, so any split of the
// work over threads gives the same numbers.

#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/cpu/convert.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/parallel.h"
#include "core/dispatch.h"
#include "core/philox.h"

namespace ox::cpu {

namespace {

constexpr int64_t kBlockGrain = 2048;

// Calls emit(i, block, lane) for every element i < n, one Philox evaluation per block.
template <class Emit>
void for_each_draw(int64_t n, philox::Kind kind, uint64_t seed, uint64_t first, Emit&& emit) {
  const auto per = static_cast<int64_t>(philox::elements_per_block(kind));
  const auto blocks = static_cast<int64_t>(philox::blocks_for(kind, uint64_t(n)));
  parallel_for(0, blocks, kBlockGrain, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      const philox::Block block = philox::block(seed, first + uint64_t(j));
      const int64_t lanes = std::min(per, n - j * per);
      for (int lane = 0; lane < lanes; ++lane) emit(j * per + lane, block, lane);
    }
  });
}

// The largest T below `to`. Rounding a draw from [from, to) to T can carry it up to `to` (f32
// rounds 1 + (1 - 2^-24) to 2, f16 rounds 1 - 2^-12 to 1); such draws take this value instead.
template <class T>
T largest_below(double to) {
  const T t = convert<T>(to);
  if constexpr (is_half_v<T>) {
    if (convert<double>(t) < to) return t;
    const uint16_t bits = t.bits;  // sign and magnitude: one step towards -inf
    return T::from_bits(uint16_t(bits == 0 ? 0x8001u : (bits & 0x8000u) ? bits + 1u : bits - 1u));
  } else if constexpr (std::is_floating_point_v<T>) {
    return convert<double>(t) < to ? t : std::nextafter(t, -std::numeric_limits<T>::infinity());
  } else {
    return t;  // uniform draws are floating only
  }
}

}  // namespace

void random(const StridedArray& dst, const RandomSpec& spec) {
  const philox::Kind kind = spec.kind;
  dispatch_dtype(dst.dtype, [&]<class T>() {
    T* d = static_cast<T*>(dst.data);
    const int64_t n = dst.numel();
    const double a = spec.a;
    const double scale = kind == philox::Kind::Normal ? spec.b : spec.b - spec.a;
    // Uniform draws stay in [a, b) in every dtype, whatever rounding to T does.
    const T top = largest_below<T>(spec.b);
    const auto below_b = [&](T v) { return spec.b > a && convert<double>(v) >= spec.b ? top : v; };
    switch (kind) {
      case philox::Kind::Uniform32:
        for_each_draw(n, kind, spec.seed, spec.first_block, [&](int64_t i, const auto& blk, int l) {
          d[i] = below_b(convert<T>(float(a + scale * double(philox::uniform32(blk, l)))));
        });
        break;
      case philox::Kind::Uniform64:
        for_each_draw(n, kind, spec.seed, spec.first_block, [&](int64_t i, const auto& blk, int l) {
          d[i] = below_b(convert<T>(a + scale * philox::uniform64(blk, l)));
        });
        break;
      case philox::Kind::Normal:
        for_each_draw(n, kind, spec.seed, spec.first_block, [&](int64_t i, const auto& blk, int l) {
          d[i] = convert<T>(a + scale * philox::normal(blk, l));
        });
        break;
      case philox::Kind::Integer:
        for_each_draw(n, kind, spec.seed, spec.first_block, [&](int64_t i, const auto& blk, int l) {
          d[i] = convert<T>(philox::integer(blk, l, spec.low, spec.range));
        });
        break;
      case philox::Kind::Bernoulli:
        break;
    }
  });
}

void bernoulli(const StridedArray& dst, const StridedArray& p, uint64_t seed, uint64_t first,
               CheckSite site) {
  dispatch_dtype(dst.dtype, [&]<class T>() {
    dispatch_dtype(p.dtype, [&]<class P>() {
      T* d = static_cast<T*>(dst.data);
      const P* prob = static_cast<const P*>(p.data);
      const int64_t np = p.numel();
      for (int64_t i = 0; i < np; ++i) {
        const double pi = convert<double>(prob[i]);
        if (!(pi >= 0 && pi <= 1)) raise_check_failure({site, 0, i, 1});
      }
      const bool one_p = np == 1;
      for_each_draw(dst.numel(), philox::Kind::Bernoulli, seed, first,
                    [&](int64_t i, const auto& blk, int lane) {
                      const double pi = convert<double>(prob[one_p ? 0 : i]);
                      d[i] = convert<T>(philox::bernoulli(blk, lane, pi));
                    });
    });
  });
}

void randperm(const StridedArray& dst, uint64_t seed, uint64_t first) {
  dispatch_dtype(dst.dtype, [&]<class T>() {
    T* d = static_cast<T*>(dst.data);
    const int64_t n = dst.numel();
    for (int64_t i = 0; i < n; ++i) d[i] = convert<T>(i);
    // Fisher-Yates from the back; swap i uses element i of an Integer-kind draw. Serial by
    // nature, so it runs on one thread on every backend.
    for (int64_t i = n - 1; i > 0; --i) {
      const philox::Block blk = philox::block(seed, first + uint64_t(i / 2));
      const auto j = static_cast<int64_t>(philox::bits64(blk, int(i % 2)) % uint64_t(i + 1));
      std::swap(d[i], d[j]);
    }
  });
}

}  // namespace ox::cpu
