// An intrusive AVL tree over an array of nodes addressed by 32-bit index,
// for allocator metadata that lives in shared memory (indices, never
// pointers). `Traits` supplies the link fields and the ordering:
//   static Links& links(Node&);                  // {left, right, parent, height}
//   static bool less(const Node&, const Node&);  // strict weak order
// Not thread-safe; the allocator's lock protects it.
#pragma once

#include <cstdint>

namespace quiver::memory::internal {

constexpr uint32_t kNil = 0xFFFFFFFFu;

struct AvlLinks {
  uint32_t left;
  uint32_t right;
  uint32_t parent;
  int32_t height;
};

template <typename Node, typename Traits>
class AvlTree {
 public:
  AvlTree(Node* nodes, uint32_t* root) : n_(nodes), root_(root) {}

  void Insert(uint32_t x) {
    AvlLinks& lx = L(x);
    lx.left = lx.right = kNil;
    lx.height = 1;
    uint32_t parent = kNil;
    uint32_t* slot = root_;
    while (*slot != kNil) {
      parent = *slot;
      slot = Traits::less(n_[x], n_[parent]) ? &L(parent).left : &L(parent).right;
    }
    lx.parent = parent;
    *slot = x;
    Rebalance(parent);
  }

  void Erase(uint32_t x) {
    AvlLinks& lx = L(x);
    uint32_t rebalance_from;
    if (lx.left != kNil && lx.right != kNil) {
      // Replace x by its in-order successor s (leftmost of the right subtree).
      uint32_t s = lx.right;
      while (L(s).left != kNil) s = L(s).left;
      uint32_t s_parent = L(s).parent;
      uint32_t s_right = L(s).right;
      if (s_parent != x) {
        Replace(s_parent, s, s_right);
        if (s_right != kNil) L(s_right).parent = s_parent;
        L(s).right = lx.right;
        L(lx.right).parent = s;
        rebalance_from = s_parent;
      } else {
        rebalance_from = s;
      }
      L(s).left = lx.left;
      L(lx.left).parent = s;
      L(s).parent = lx.parent;
      L(s).height = lx.height;
      Replace(lx.parent, x, s);
    } else {
      uint32_t child = lx.left != kNil ? lx.left : lx.right;
      if (child != kNil) L(child).parent = lx.parent;
      Replace(lx.parent, x, child);
      rebalance_from = lx.parent;
    }
    Rebalance(rebalance_from);
  }

  // The first node not less than `probe` (a Node used only as a key).
  uint32_t LowerBound(const Node& probe) const {
    uint32_t cur = *root_, best = kNil;
    while (cur != kNil) {
      if (Traits::less(n_[cur], probe)) {
        cur = L(cur).right;
      } else {
        best = cur;
        cur = L(cur).left;
      }
    }
    return best;
  }

  // The node equal to `probe` (neither less), or kNil.
  uint32_t Find(const Node& probe) const {
    uint32_t x = LowerBound(probe);
    return (x != kNil && !Traits::less(probe, n_[x])) ? x : kNil;
  }

  // The greatest node not greater than `probe`, or kNil.
  uint32_t Floor(const Node& probe) const {
    uint32_t cur = *root_, best = kNil;
    while (cur != kNil) {
      if (Traits::less(probe, n_[cur])) {
        cur = L(cur).left;
      } else {
        best = cur;
        cur = L(cur).right;
      }
    }
    return best;
  }

  uint32_t Last() const {
    uint32_t cur = *root_;
    if (cur == kNil) return kNil;
    while (L(cur).right != kNil) cur = L(cur).right;
    return cur;
  }

  // Checks ordering, parent links and AVL balance; returns the node count or
  // -1 if the tree is malformed. For tests and recovery checks.
  int64_t Check() const {
    int64_t count = 0;
    return CheckSubtree(*root_, kNil, &count) < 0 ? -1 : count;
  }

 private:
  AvlLinks& L(uint32_t i) const { return Traits::links(n_[i]); }
  int32_t H(uint32_t i) const { return i == kNil ? 0 : L(i).height; }
  void Update(uint32_t i) {
    int32_t hl = H(L(i).left), hr = H(L(i).right);
    L(i).height = 1 + (hl > hr ? hl : hr);
  }
  // Points parent's link (or the root) that held `from` at `to`.
  void Replace(uint32_t parent, uint32_t from, uint32_t to) {
    if (parent == kNil) {
      *root_ = to;
    } else if (L(parent).left == from) {
      L(parent).left = to;
    } else {
      L(parent).right = to;
    }
  }
  uint32_t RotateLeft(uint32_t x) {
    uint32_t y = L(x).right;
    L(x).right = L(y).left;
    if (L(y).left != kNil) L(L(y).left).parent = x;
    L(y).parent = L(x).parent;
    Replace(L(x).parent, x, y);
    L(y).left = x;
    L(x).parent = y;
    Update(x);
    Update(y);
    return y;
  }
  uint32_t RotateRight(uint32_t x) {
    uint32_t y = L(x).left;
    L(x).left = L(y).right;
    if (L(y).right != kNil) L(L(y).right).parent = x;
    L(y).parent = L(x).parent;
    Replace(L(x).parent, x, y);
    L(y).right = x;
    L(x).parent = y;
    Update(x);
    Update(y);
    return y;
  }
  void Rebalance(uint32_t x) {
    while (x != kNil) {
      Update(x);
      int32_t balance = H(L(x).left) - H(L(x).right);
      if (balance > 1) {
        if (H(L(L(x).left).left) < H(L(L(x).left).right)) RotateLeft(L(x).left);
        x = RotateRight(x);
      } else if (balance < -1) {
        if (H(L(L(x).right).right) < H(L(L(x).right).left)) RotateRight(L(x).right);
        x = RotateLeft(x);
      }
      x = L(x).parent;
    }
  }
  int32_t CheckSubtree(uint32_t x, uint32_t parent, int64_t* count) const {
    if (x == kNil) return 0;
    if (L(x).parent != parent) return -1;
    if (++*count > (int64_t{1} << 32)) return -1;  // a cycle
    uint32_t l = L(x).left, r = L(x).right;
    if (l != kNil && Traits::less(n_[x], n_[l])) return -1;
    if (r != kNil && Traits::less(n_[r], n_[x])) return -1;
    int32_t hl = CheckSubtree(l, x, count);
    int32_t hr = CheckSubtree(r, x, count);
    if (hl < 0 || hr < 0 || hl - hr > 1 || hr - hl > 1) return -1;
    int32_t h = 1 + (hl > hr ? hl : hr);
    return h == L(x).height ? h : -1;
  }

  Node* n_;
  uint32_t* root_;
};

}  // namespace quiver::memory::internal
