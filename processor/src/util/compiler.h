/*
 * compiler.h - what the Processor asks of the compiler, in one place: MUSTCHECK on every function
 * whose result says whether it worked (gcc and clang warn, and -Werror fails the build, when a
 * caller drops it).
 */
#ifndef PGRELAY_COMPILER_H
#define PGRELAY_COMPILER_H

#define MUSTCHECK __attribute__((warn_unused_result))

#endif
