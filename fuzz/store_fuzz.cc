// libFuzzer target: the object store's decoders of text a user or a saved
// file hands to the client library.
//
// The first byte of an input picks what the rest is fed to:
//   0  EventCursor::FromString. An accepted cursor must print (ToString)
//      to a text that parses back to the same cursor.
//   1  ObjectId::FromHex. An accepted id must print (Hex) to the input in
//      lower case, and FromBinary of its bytes must give it back.
//   2  ObjectId::FromBinary: accepted exactly when it has 20 bytes.
//   3  DecodePackedIds (a Get's ids): accepted ids must pack back to
//      exactly the input.
//   4  DecodeFoundRecords (a Get's reply): accepted records must encode
//      back to exactly the input.
//   5+ DecodeStoreRecord (a record read from a region after a crash): an
//      accepted record must encode to exactly its bytes.
// The store's wire messages are fuzzed by control_fuzz with the rest of the
// protocol.

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "quiver/store.h"
#include "quiver/store/object_id.h"
#include "store/store_record.h"

namespace {

using quiver::store::EventCursor;
using quiver::store::ObjectId;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "store_fuzz: %s\n", what);
    std::abort();
  }
}

void Cursor(std::string_view text) {
  auto c = EventCursor::FromString(text);
  if (!c.ok()) {
    Check(c.status().IsInvalid(), "a bad cursor gave an error other than Invalid");
    return;
  }
  const std::string printed = c->ToString();
  auto again = EventCursor::FromString(printed);
  Check(again.ok(), "a printed cursor does not parse");
  Check(again->last == c->last, "a cursor changed across a round trip");
  Check(again->ToString() == printed, "a cursor prints two ways");
}

void Hex(std::string_view text) {
  auto id = ObjectId::FromHex(text);
  if (!id.ok()) {
    Check(id.status().IsInvalid(), "bad hex gave an error other than Invalid");
    return;
  }
  std::string lower(text);
  for (char& ch : lower)
    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  Check(id->Hex() == lower, "an id prints differently from the hex it came from");
  auto back = ObjectId::FromBinary(id->Binary());
  Check(back.ok() && *back == *id, "an id's bytes do not give it back");
}

void Binary(std::string_view bytes) {
  auto id = ObjectId::FromBinary(bytes);
  Check(id.ok() == (bytes.size() == ObjectId::kSize), "FromBinary misjudged a length");
  if (id.ok()) Check(id->Binary() == bytes, "an id's bytes changed");
}

void Record(std::string_view bytes) {
  auto r = quiver::store::DecodeStoreRecord(bytes);
  if (!r.ok()) {
    Check(r.status().IsInvalid(), "a bad record gave an error other than Invalid");
    return;
  }
  Check(quiver::store::EncodeStoreRecord(*r) == bytes, "a record has two spellings");
}

void PackedIds(std::string_view bytes) {
  auto ids = quiver::store::DecodePackedIds(bytes);
  if (!ids.ok()) {
    Check(ids.status().IsInvalid(), "bad packed ids gave an error other than Invalid");
    return;
  }
  Check(quiver::store::EncodePackedIds(*ids) == bytes, "packed ids have two spellings");
}

void Found(std::string_view bytes) {
  auto found = quiver::store::DecodeFoundRecords(bytes);
  if (!found.ok()) {
    Check(found.status().IsInvalid(),
          "bad found records gave an error other than Invalid");
    return;
  }
  std::string again;
  for (const auto& r : *found) quiver::store::AppendFoundRecord(&again, r);
  Check(again == bytes, "found records have two spellings");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0]) {
    case 0:
      Cursor(rest);
      break;
    case 1:
      Hex(rest);
      break;
    case 2:
      Binary(rest);
      break;
    case 3:
      PackedIds(rest);
      break;
    case 4:
      Found(rest);
      break;
    default:
      Record(rest);
      break;
  }
  return 0;
}
