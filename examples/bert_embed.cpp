// Sentence embeddings with a BERT folder (config.json, weights, tokenizer.json): the texts
// tokenized as a padded batch, the encoder's last hidden state averaged over each text's tokens
// (the attention mask keeps padding out), and the cosine similarity of every pair, as
//   enc = tok(texts, padding=True, return_tensors="pt"); h = AutoModel.from_pretrained(dir)(**enc)
//   emb = (h.last_hidden_state * mask).sum(1) / mask.sum(1)
//
//   bert_embed DIR
//
// Exits 1 if an embedding is not finite or a text is not most similar to itself.

#include <oxmera/oxmera.h>

#include <cmath>
#include <iomanip>
#include <iostream>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: bert_embed DIR\n";
    return 2;
  }
  const auto tokenizer = ox::tokenizers::Tokenizer::from_file(argv[1]);
  const auto model = ox::models::AutoModel::from_pretrained(argv[1]);
  const std::vector<std::string> texts{"The tensor is on the GPU.", "A tensor lives on a device.",
                                       "Fashion-MNIST has ten classes of clothing."};

  // Right padding to the longest text, with the mask marking the real tokens.
  const auto batch = tokenizer.encode_batch(texts);
  size_t longest = 0;
  for (const auto& ids : batch) longest = std::max(longest, ids.size());
  const int64_t pad = tokenizer.token_to_id("[PAD]").value_or(0);
  std::vector<int64_t> ids, mask;
  for (const auto& row : batch) {
    for (size_t i = 0; i < longest; ++i) {
      ids.push_back(i < row.size() ? row[i] : pad);
      mask.push_back(i < row.size() ? 1 : 0);
    }
  }
  const int64_t b = int64_t(texts.size()), t = int64_t(longest);
  const ox::Tensor attention = ox::tensor(mask, {b, t});
  ox::NoGradGuard no_grad;
  const ox::Tensor hidden = model->forward(ox::tensor(ids, {b, t}), attention);  // [B, T, H]

  const ox::Tensor weights = attention.to(ox::kF32).unsqueeze(-1);
  ox::Tensor embedding = (hidden * weights).sum(1) / weights.sum(1);
  embedding = embedding / embedding.norm(2, {-1}, true);
  const ox::Tensor similarity = ox::matmul(embedding, embedding.t());

  bool ok = ox::isfinite(embedding).all().item<bool>();
  std::cout << std::fixed << std::setprecision(3);
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = 0; j < b; ++j) {
      const double s = similarity[i][j].item<double>();
      std::cout << std::setw(8) << s;
      if (j != i && s > similarity[i][i].item<double>() + 1e-5) ok = false;
    }
    std::cout << "   " << texts[size_t(i)] << "\n";
  }
  return ok ? 0 : 1;
}
