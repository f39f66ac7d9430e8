// The KV cache, the forward passes every causal model shares (positions from the attention mask,
// the cache's bookkeeping), and generation: greedy or sampled, with transformers' processors.

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_set>

#include "models/pretrained.h"
#include "oxmera/autograd.h"
#include "oxmera/core/error.h"
#include "oxmera/ops.h"

namespace ox::models {

KVCache::KVCache(int64_t capacity) : capacity_(capacity) {
  OX_CHECK(capacity > 0, Value, "KVCache", "capacity must be positive, got ", capacity);
}

void KVCache::reset() {
  length_ = 0;
  next_position_ = {};
  key_mask_ = {};
}

std::pair<Tensor, Tensor> KVCache::update(size_t layer, const Tensor& keys, const Tensor& values) {
  const int64_t t = keys.size(2);
  OX_CHECK(length_ + t <= capacity_, Value, "KVCache", "holding ", length_, " positions, ", t,
           " more exceed its capacity of ", capacity_);
  if (layer >= keys_.size()) {
    keys_.resize(layer + 1);
    values_.resize(layer + 1);
  }
  if (!keys_[layer].defined()) {
    keys_[layer] = empty({keys.size(0), keys.size(1), capacity_, keys.size(3)}, keys.options());
    values_[layer] =
        empty({values.size(0), values.size(1), capacity_, values.size(3)}, values.options());
  }
  OX_CHECK(keys_[layer].size(0) == keys.size(0) && keys_[layer].size(1) == keys.size(1), Shape,
           "KVCache", "keys ", keys.shape(), " do not fit the cache's ", keys_[layer].shape(),
           " (another batch or model: reset() first)");
  keys_[layer].narrow(2, length_, t).copy_(keys);
  values_[layer].narrow(2, length_, t).copy_(values);
  return {keys_[layer].narrow(2, 0, length_ + t), values_[layer].narrow(2, 0, length_ + t)};
}

void KVCache::advance(int64_t positions, Tensor next_position, Tensor key_mask) {
  length_ += positions;
  next_position_ = std::move(next_position);
  key_mask_ = std::move(key_mask);
}

Tensor CausalLM::forward(const Tensor& input_ids) {
  return forward_step(input_ids, nullptr, {}, false);
}

Tensor CausalLM::forward(const Tensor& input_ids, KVCache& cache, const Tensor& attention_mask) {
  return forward_step(input_ids, &cache, attention_mask, false);
}

// Positions as transformers numbers them: from the attention mask, the count of real tokens
// before each one (padding at 1, never attended); without one, on from the cache's.
Tensor CausalLM::forward_step(const Tensor& input_ids, KVCache* cache, const Tensor& attention_mask,
                              bool last_only) {
  OX_CHECK(input_ids.dim() == 2, Shape, model_type(), "input_ids must be [batch, length], got ",
           input_ids.shape());
  OX_CHECK(input_ids.dtype() == kI64 || input_ids.dtype() == kI32, DType, model_type(),
           "input_ids must be integers, got ", input_ids.dtype());
  const int64_t b = input_ids.size(0), t = input_ids.size(1);
  const int64_t past = cache ? cache->length() : 0;
  const auto i64 = ox::dtype(kI64).device(input_ids.device());
  Step step;
  step.cache = cache;
  step.last_only = last_only;
  if (attention_mask.defined()) {
    OX_CHECK(attention_mask.dim() == 2 && attention_mask.size(0) == b &&
                 attention_mask.size(1) == past + t,
             Shape, model_type(), "attention_mask must be [", b, ", ", past + t,
             "] (the past and the new tokens), got ", attention_mask.shape());
    const Tensor mask = attention_mask.to(input_ids.device(), kI64);
    const Tensor real = ne(mask, 0);
    step.positions =
        masked_fill(cumsum(mask, 1) - 1, logical_not(real), 1).narrow(1, past, t).contiguous();
    step.key_mask = real;
  } else {
    const Tensor start = cache && cache->next_position().defined()
                             ? cache->next_position().unsqueeze(1)
                             : full({b, 1}, past, i64);
    step.positions = start + arange(t, i64).unsqueeze(0);
    if (cache && cache->key_mask().defined()) {
      step.key_mask =
          cat({cache->key_mask(), ones({b, t}, ox::dtype(kBool).device(input_ids.device()))}, 1);
    }
  }
  Tensor logits = run(input_ids.to(kI64), step);
  if (cache) cache->advance(t, step.positions.select(1, t - 1) + 1, step.key_mask);
  return logits;
}

namespace {

// One row's next token from its logits: transformers' repetition penalty, then temperature,
// top-k and top-p, then a draw (or the first most likely token when not sampling).
int64_t choose(std::vector<float> logits, const std::vector<int64_t>& seen,
               const GenerateOptions& o, double uniform) {
  if (o.repetition_penalty != 1.0) {
    std::unordered_set<int64_t> done;
    for (int64_t id : seen) {
      if (id < 0 || size_t(id) >= logits.size() || !done.insert(id).second) continue;
      float& l = logits[size_t(id)];
      l = l < 0 ? float(l * o.repetition_penalty) : float(l / o.repetition_penalty);
    }
  }
  if (!o.do_sample) {
    return int64_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float& l : logits) l = float(l / o.temperature);
  if (o.top_k > 0 && size_t(o.top_k) < logits.size()) {
    std::vector<float> sorted = logits;
    std::nth_element(sorted.begin(), sorted.begin() + (o.top_k - 1), sorted.end(),
                     std::greater<>());
    const float kth = sorted[size_t(o.top_k - 1)];
    for (float& l : logits)
      if (l < kth) l = -inf;  // ties with the k-th stay, as transformers'
  }
  std::vector<size_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return logits[a] > logits[b]; });
  const float top = logits[order[0]];
  std::vector<double> probs(logits.size(), 0.0);
  double total = 0;
  for (size_t i : order) total += probs[i] = std::exp(double(logits[i] - top));
  if (o.top_p < 1.0) {  // the fewest most likely tokens whose probability reaches top_p
    double cumulative = 0;
    size_t kept = 0;
    for (; kept < order.size() && (kept == 0 || cumulative < o.top_p * total); ++kept) {
      cumulative += probs[order[kept]];
    }
    for (size_t k = kept; k < order.size(); ++k) probs[order[k]] = 0;
    total = cumulative;
  }
  double target = uniform * total;
  for (size_t i : order) {
    if (probs[i] == 0) continue;
    if ((target -= probs[i]) < 0) return int64_t(i);
  }
  return int64_t(order[0]);
}

}  // namespace

Tensor CausalLM::generate(const Tensor& input_ids, const GenerateOptions& o) {
  const char* op = "generate";
  OX_CHECK(input_ids.dim() == 2 && input_ids.size(1) > 0, Shape, op,
           "input_ids must be [batch, length] with length > 0, got ", input_ids.shape());
  OX_CHECK(o.max_new_tokens >= 0, Value, op, "max_new_tokens must be >= 0, got ", o.max_new_tokens);
  OX_CHECK(!o.do_sample || o.temperature > 0, Value, op, "temperature must be > 0, got ",
           o.temperature);
  OX_CHECK(o.top_p > 0 && o.top_p <= 1, Value, op, "top_p must be in (0, 1], got ", o.top_p);
  OX_CHECK(o.repetition_penalty > 0, Value, op, "repetition_penalty must be > 0, got ",
           o.repetition_penalty);
  NoGradGuard no_grad;
  const int64_t b = input_ids.size(0), t = input_ids.size(1);
  const Tensor ids_cpu = input_ids.to(Device::cpu(), kI64).contiguous();
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(b));
  for (int64_t r = 0; r < b; ++r) {
    const int64_t* p = ids_cpu.data_ptr<int64_t>() + r * t;
    rows[size_t(r)].assign(p, p + t);
  }
  if (o.max_new_tokens == 0) return input_ids.to(kI64);
  const int64_t pad = o.pad_token_id.value_or(o.eos_token_id.empty() ? 0 : o.eos_token_id[0]);
  Generator local(o.seed.value_or(0));
  Generator* generator = o.seed ? &local : &default_generator();

  KVCache cache(t + o.max_new_tokens);
  Tensor mask =
      o.attention_mask.defined() ? o.attention_mask.to(input_ids.device(), kI64) : Tensor();
  Tensor logits = forward_step(input_ids, &cache, mask, /*last_only=*/true);
  std::vector<bool> finished(size_t(b), false);
  std::vector<int64_t> next(static_cast<size_t>(b));
  // Plain greedy decoding picks on the model's device: b ids reach the host each step, not
  // b x vocab logits (the ids must: the callback and the end tokens read them).
  const bool greedy = !o.do_sample && o.repetition_penalty == 1.0;
  for (int64_t n = 0; n < o.max_new_tokens; ++n) {
    const Tensor last = logits.select(1, logits.size(1) - 1);
    const Tensor picked = greedy ? last.argmax(-1).to(Device::cpu()).contiguous() : Tensor();
    const Tensor host = greedy ? Tensor() : last.to(Device::cpu(), kF32).contiguous();
    const Tensor draws =
        o.do_sample ? rand({b}, ox::dtype(kF64).device(Device::cpu()), generator) : Tensor();
    for (int64_t r = 0; r < b; ++r) {
      if (finished[size_t(r)]) {
        next[size_t(r)] = pad;
        continue;
      }
      if (greedy) {
        next[size_t(r)] = picked.data_ptr<int64_t>()[r];
      } else {
        const float* row = host.data_ptr<float>() + r * host.size(1);
        next[size_t(r)] = choose(std::vector<float>(row, row + host.size(1)), rows[size_t(r)], o,
                                 o.do_sample ? draws.data_ptr<double>()[r] : 0.0);
      }
      const auto& eos = o.eos_token_id;
      if (std::find(eos.begin(), eos.end(), next[size_t(r)]) != eos.end())
        finished[size_t(r)] = true;
    }
    for (int64_t r = 0; r < b; ++r) rows[size_t(r)].push_back(next[size_t(r)]);
    if (o.on_tokens) o.on_tokens(next);
    if (n + 1 == o.max_new_tokens ||
        std::all_of(finished.begin(), finished.end(), [](bool f) { return f; }))
      break;
    const Tensor step_ids = tensor(next, {b, 1}).to(input_ids.device());
    if (mask.defined()) mask = cat({mask, ones({b, 1}, mask.options())}, 1);
    logits = forward_step(step_ids, &cache, mask, /*last_only=*/true);
  }
  std::vector<int64_t> flat;
  for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
  return tensor(flat, {b, int64_t(rows[0].size())}).to(input_ids.device());
}

}  // namespace ox::models
