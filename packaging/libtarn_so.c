/* libtarn.so has no code of its own: it links libtarn.a whole (CMakeLists.txt).
 * CMake wants one source file for a library target; this is it. */
typedef int tarn__so_unit;
