#include "yharness.h"
TEST(placeholder) { }
TEST_MAIN(T(placeholder))
