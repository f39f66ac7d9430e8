// libFuzzer target for the PyTorch checkpoint reader without tensors (src/io/pytorch_format.cpp,
// pickle.cpp, zip_reader.cpp), built and run by scripts/fuzz.sh with ASan and UBSan. An
// ox::Error is an expected answer to a bad file; a crash, a sanitizer report, a leak or any
// other exception is a finding. The first byte chooses what the rest is: even, a whole file
// (zip or legacy); odd, a bare pickle for the unpickler alone (zip CRCs would hide most pickle
// mutations from it). A file that parses must describe views inside their storages.

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "io/pickle.h"
#include "io/pytorch_format.h"
#include "oxmera/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool bare_pickle = data[0] & 1;
  try {
    if (bare_pickle) {
      ox::io::pickle::unpickle(data + 1, size - 1, 0, "<fuzz>", "pickle");
      return 0;
    }
    const ox::io::PytorchContents c = ox::io::parse_pytorch(data + 1, size - 1, "<fuzz>");
    for (const ox::io::PytorchTensorView& t : c.tensors) {
      if (t.numel == 0) continue;
      int64_t last = t.offset;
      for (size_t d = 0; d < t.shape.size(); ++d) last += (t.shape[d] - 1) * t.strides[d];
      if (t.storage >= c.storages.size() || last >= c.storages[t.storage].numel()) {
        std::fprintf(stderr, "view '%s' reaches past its storage\n", t.name.c_str());
        std::abort();
      }
    }
  } catch (const ox::Error&) {
  }
  return 0;
}
