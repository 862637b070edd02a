# CMake generated Testfile for 
# Source directory: /work/main/tests/io
# Build directory: /work/main/build-io/tests/io
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
include("/work/main/build-io/tests/io/io_test[1]_include.cmake")
include("/work/main/build-io/tests/io/random_test[1]_include.cmake")
