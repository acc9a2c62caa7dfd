// GoogleTest assertions on Status and Result, shared by the test suites.
#pragma once

#include <gtest/gtest.h>

#include "quiver/util/result.h"

#define ASSERT_OK(expr)                                       \
  do {                                                        \
    ::quiver::Status _st = (expr);                            \
    ASSERT_TRUE(_st.ok()) << #expr << ": " << _st.ToString(); \
  } while (false)

#define ASSERT_OK_AND_ASSIGN(lhs, rexpr)                                       \
  auto QUIVER_CONCAT(_res_, __LINE__) = (rexpr);                               \
  ASSERT_TRUE(QUIVER_CONCAT(_res_, __LINE__).ok())                             \
      << #rexpr << ": " << QUIVER_CONCAT(_res_, __LINE__).status().ToString(); \
  lhs = std::move(QUIVER_CONCAT(_res_, __LINE__)).MoveValueUnsafe()
