// Text <-> token ids for the vocabularies GGUF models carry: SentencePiece ("llama"), byte-level
// BPE ("gpt2", pre-tokenizer chosen by tokenizer.ggml.pre), WordPiece ("bert"), SentencePiece
// unigram ("t5") and SentencePiece-style BPE ("gemma4"). Encoding
// matches llama.cpp's tokenizer (its test vectors are the reference).
//
// A Tokenizer is immutable after construction; encode/decode may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/special_split.h"
#include "engine/tokenizer/tokenizer_error.h"
#include "engine/tokenizer/vocab.h"

namespace vkllm::tokenizer {

class Tokenizer {
 public:
  // Builds the tokenizer tokenizer.ggml.model names. Throws TokenizerError for unknown models
  // or pre-tokenizers and for inconsistent vocabulary metadata.
  static std::unique_ptr<Tokenizer> from_gguf(const gguf::GgufFile& file);
  static std::unique_ptr<Tokenizer> from_vocab(Vocab vocab);

  virtual ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // add_special: BOS/EOS as the vocabulary asks (add_bos()/add_eos()). parse_special: control
  // tokens written in the text ("<|eot_id|>") become those tokens; user-defined tokens are
  // always recognised. SPM vocabularies get a leading space at the start of the text and after
  // every special token, as SentencePiece's dummy prefix does.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes the ids stand for (not necessarily valid UTF-8 if the ids cut a character).
  // Control/unknown tokens render as nothing unless render_special. The leading space an SPM or
  // WordPiece vocabulary puts on the first word is dropped when the ids begin the text (no
  // text-producing token before it), so decode(encode(text)) gives text back for SPM.
  std::string decode(std::span<const int32_t> ids, bool render_special = false) const;

  // The bytes of one token; control/unknown tokens give their text only if render_special.
  // Throws TokenizerError for an id outside the vocabulary.
  std::string token_to_piece(int32_t id, bool render_special = false) const;
  // Whether the ids' text starts with a word-start space that begins-of-text decoding drops.
  bool strips_leading_space() const;

  const Vocab& vocab() const { return vocab_; }
  int32_t vocab_size() const { return vocab_.size(); }
  int32_t bos() const { return vocab_.bos; }
  int32_t eos() const { return vocab_.eos; }
  int32_t eot() const { return vocab_.eot; }
  bool add_bos() const { return vocab_.add_bos; }
  bool add_eos() const { return vocab_.add_eos; }
  // EOS, EOT, EOM and the other end-of-turn tokens the vocabulary has.
  bool is_end_of_generation(int32_t id) const;
  bool is_control(int32_t id) const;  // control or unknown: renders as nothing by default

 protected:
  explicit Tokenizer(Vocab vocab);
  // Encodes one raw-text fragment (no special tokens in it). at_text_start: the fragment starts
  // the text or follows a special token (SPM adds its dummy-prefix space there).
  virtual void encode_fragment(std::string_view text, bool at_text_start,
                               std::vector<int32_t>& out) const = 0;
  // The bytes of a non-control token (computed once per token at construction).
  virtual std::string piece_of(int32_t id) const = 0;
  void build_pieces();  // subclasses call this at the end of their constructor

  Vocab vocab_;

 private:
  SpecialTokenSplitter splitter_;
  std::vector<std::string> pieces_;
};

}  // namespace vkllm::tokenizer
