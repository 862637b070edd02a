// The source of kef_test_pch, the program CMake builds the test programs' precompiled header with
// (tests/CMakeLists.txt); its main is gtest_main's, and it is never run.
