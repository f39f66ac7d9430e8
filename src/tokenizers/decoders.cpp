// The decoders of tokenizer.json: tokens back into text.

#include <algorithm>
#include <vector>

#include "tokenizers/pipeline.h"

namespace ox::tokenizers::decoders {
namespace {

// GPT-2's alphabet back to bytes, all tokens into one string (a token with a code point outside
// the alphabet, an added token, is taken as it is).
class ByteLevel final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& token : tokens) {
      const size_t mark = bytes.size();
      bool in_alphabet = true;
      for (size_t i = 0; i < token.size() && in_alphabet;) {
        const int byte = text_to_byte(text::next_code_point(token, i));
        in_alphabet = byte >= 0;
        if (in_alphabet) bytes += char(byte);
      }
      if (!in_alphabet) bytes.replace(mark, std::string::npos, token);
    }
    tokens.assign(1, text::utf8_lossy(bytes));
  }
};

// Runs of <0xAB> tokens back to bytes: their text where the run is UTF-8, one U+FFFD per byte
// otherwise.
class ByteFallback final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string run;
    size_t run_length = 0;
    const auto flush = [&] {
      if (run_length == 0) return;
      if (text::utf8_lossy(run) == run) {
        out.push_back(run);
      } else {
        for (size_t k = 0; k < run_length; ++k) out.emplace_back("\xEF\xBF\xBD");
      }
      run.clear();
      run_length = 0;
    };
    for (std::string& token : tokens) {
      if (const int byte = byte_of(token); byte >= 0) {
        run += char(byte);
        ++run_length;
        continue;
      }
      flush();
      out.push_back(std::move(token));
    }
    flush();
    tokens.swap(out);
  }

 private:
  static int byte_of(const std::string& token) {
    if (token.size() != 6 || !token.starts_with("<0x") || token[5] != '>') return -1;
    int value = 0;
    for (size_t i = 3; i < 5; ++i) {
      const char c = token[i];
      const int digit = c >= '0' && c <= '9'   ? c - '0'
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10
                        : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                               : -1;
      if (digit < 0) return -1;
      value = value * 16 + digit;
    }
    return value;
  }
};

class Fuse final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string joined;
    for (const auto& token : tokens) joined += token;
    tokens.assign(1, std::move(joined));
  }
};

// Up to `start` leading and `stop` trailing copies of `content` off each token.
class Strip final : public Decoder {
 public:
  Strip(char32_t content, int64_t start, int64_t stop)
      : content_(content), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& token : tokens) {
      std::vector<char32_t> chars;
      for (size_t i = 0; i < token.size();) chars.push_back(text::next_code_point(token, i));
      size_t begin = 0, end = chars.size();
      while (begin < end && int64_t(begin) < start_ && chars[begin] == content_) ++begin;
      // As the library: the end cut counts from the end of the token, not of what is left.
      for (int64_t k = 0; k < stop_ && k < int64_t(chars.size()); ++k) {
        const size_t index = chars.size() - size_t(k) - 1;
        if (chars[index] != content_) break;
        end = index;
      }
      end = std::max(end, begin);  // "▁" with start 1 and stop 1 is empty, not an error
      std::string out;
      for (size_t k = begin; k < end; ++k) text::append_utf8(out, chars[k]);
      token.swap(out);
    }
  }

 private:
  char32_t content_;
  int64_t start_, stop_;
};

class Replace final : public Decoder {
 public:
  Replace(text::Regex pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    thread_local std::vector<Span> spans;
    for (auto& token : tokens) {
      regex_spans(pattern_, token, false, spans);
      std::string out;
      for (const Span& span : spans) {
        if (span.is_match) {
          out += content_;
        } else {
          out.append(token, span.begin, span.end - span.begin);
        }
      }
      token.swap(out);
    }
  }

 private:
  text::Regex pattern_;
  std::string content_;
};

// ▁ back to spaces; the first token's ▁ dropped when the pre-tokenizer put one in front.
class Metaspace final : public Decoder {
 public:
  Metaspace(char32_t replacement, bool drop_first)
      : replacement_(replacement), drop_first_(drop_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t t = 0; t < tokens.size(); ++t) {
      std::string out;
      const std::string& token = tokens[t];
      for (size_t i = 0; i < token.size();) {
        const char32_t c = text::next_code_point(token, i);
        if (c != replacement_) {
          text::append_utf8(out, c);
        } else if (t != 0 || !drop_first_) {
          out += ' ';
        }
      }
      tokens[t].swap(out);
    }
  }

 private:
  char32_t replacement_;
  bool drop_first_;
};

class WordPiece final : public Decoder {
 public:
  WordPiece(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t t = 0; t < tokens.size(); ++t) {
      std::string& token = tokens[t];
      if (t != 0) {
        if (token.starts_with(prefix_)) {
          token.erase(0, prefix_.size());
        } else {
          token.insert(0, 1, ' ');
        }
      }
      if (cleanup_) token = cleanup(token);
    }
  }

  // English detokenization, as the library's (each replacement over the whole token in turn).
  static std::string cleanup(std::string s) {
    static const std::pair<std::string_view, std::string_view> kRules[] = {
        {" .", "."},   {" ?", "?"},     {" !", "!"},    {" ,", ","},
        {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},  {" do not", " don't"},
        {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : kRules) {
      std::string out;
      size_t previous = 0;
      for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, previous)) {
        out.append(s, previous, at - previous).append(to);
        previous = at + from.size();
      }
      out.append(s, previous);
      s.swap(out);
    }
    return s;
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

// The original BPE's end-of-word suffix: a space between words, none after the last.
class BpeDecoder final : public Decoder {
 public:
  explicit BpeDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t t = 0; t < tokens.size(); ++t) {
      const std::string_view replacement = t + 1 == tokens.size() ? "" : " ";
      std::string& token = tokens[t];
      if (suffix_.empty()) continue;
      std::string out;
      size_t previous = 0;
      for (size_t at = token.find(suffix_); at != std::string::npos;
           at = token.find(suffix_, previous)) {
        out.append(token, previous, at - previous).append(replacement);
        previous = at + suffix_.size();
      }
      out.append(token, previous);
      token.swap(out);
    }
  }

 private:
  std::string suffix_;
};

class Sequence final : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) step->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

}  // namespace

std::unique_ptr<Decoder> make(const Json& j) {
  if (j.is_null()) return nullptr;
  constexpr std::string_view where = "decoder";
  const std::string type = json::type(j, where);
  if (type == "ByteLevel") return std::make_unique<ByteLevel>();
  if (type == "ByteFallback") return std::make_unique<ByteFallback>();
  if (type == "Fuse") return std::make_unique<Fuse>();
  if (type == "Strip") {
    return std::make_unique<Strip>(json::character(j, "content", where),
                                   json::integer(j, "start", 0, where),
                                   json::integer(j, "stop", 0, where));
  }
  if (type == "Replace") {
    return std::make_unique<Replace>(json::pattern(j, "pattern", "decoder Replace"),
                                     json::string(j, "content", where));
  }
  if (type == "Metaspace") {
    bool drop_first = json::boolean(j, "add_prefix_space", true, where);
    if (const auto scheme = json::optional_string(j, "prepend_scheme", where)) {
      drop_first = *scheme != "never";
    }
    return std::make_unique<Metaspace>(json::character(j, "replacement", where), drop_first);
  }
  if (type == "WordPiece") {
    return std::make_unique<WordPiece>(json::optional_string(j, "prefix", where).value_or("##"),
                                       json::boolean(j, "cleanup", true, where));
  }
  if (type == "BPEDecoder") {
    return std::make_unique<BpeDecoder>(json::optional_string(j, "suffix", where).value_or("</w>"));
  }
  if (type == "Sequence") {
    const Json& list = json::member(j, "decoders", where);
    if (!list.is_array()) json::fail(where, "\"decoders\" is not a list");
    std::vector<std::unique_ptr<Decoder>> steps;
    for (const Json& step : list) {
      if (auto made = make(step)) steps.push_back(std::move(made));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  json::fail(where, "the decoder \"" + type +
                        "\" is not supported (ByteLevel, ByteFallback, Fuse, Strip, Replace, "
                        "Metaspace, WordPiece, BPEDecoder, Sequence)");
}

}  // namespace ox::tokenizers::decoders
