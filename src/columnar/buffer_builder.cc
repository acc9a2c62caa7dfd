#include "quiver/columnar/buffer_builder.h"

namespace quiver {

Status BufferBuilder::Grow(int64_t needed) {
  // Geometric growth keeps appends amortised O(1); start at one cache line.
  int64_t target = std::max<int64_t>(needed, std::max<int64_t>(capacity_ * 2, 64));
  if (buffer_ == nullptr) {
    QUIVER_ASSIGN_OR_RAISE(buffer_, AllocateResizableBuffer(0, pool_));
  }
  QUIVER_RETURN_NOT_OK(buffer_->Reserve(target));
  data_ = buffer_->mutable_data();
  capacity_ = buffer_->capacity();
  return Status::OK();
}

Result<std::shared_ptr<Buffer>> BufferBuilder::Finish(bool shrink_to_fit) {
  if (buffer_ == nullptr) {
    QUIVER_ASSIGN_OR_RAISE(buffer_, AllocateResizableBuffer(0, pool_));
  }
  QUIVER_RETURN_NOT_OK(buffer_->Resize(size_, shrink_to_fit));
  buffer_->ZeroPadding();
  std::shared_ptr<Buffer> out = std::move(buffer_);
  Reset();
  return out;
}

}  // namespace quiver
