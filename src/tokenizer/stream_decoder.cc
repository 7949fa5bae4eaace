#include "tokenizer/stream_decoder.h"

#include "tokenizer/utf8.h"

namespace kvengine {

std::string StreamDecoder::Push(int32_t id) {
  if (index_ == 0) first_id_ = id;
  tokenizer_.AppendPiece(id, tokenizer_.StripsLeadingSpace(index_, first_id_), &pending_);
  ++index_;

  std::string out;
  size_t pos = 0;
  while (pos < pending_.size()) {
    const Utf8ScanResult r = ScanUtf8(pending_, pos);
    bool done = false;
    switch (r.scan) {
      case Utf8Scan::kValid:
        out.append(pending_, pos, r.length);
        break;
      case Utf8Scan::kInvalid:
        out.append(kUtf8Replacement);
        break;
      case Utf8Scan::kTruncated:
        done = true;  // Wait for the next piece; r.length <= 3 bytes stay pending.
        break;
    }
    if (done) break;
    pos += r.length;
  }
  pending_.erase(0, pos);
  return out;
}

std::string StreamDecoder::Finish() {
  std::string out = SanitizeUtf8(pending_);
  pending_.clear();
  index_ = 0;
  first_id_ = kNoToken;
  return out;
}

}  // namespace kvengine
