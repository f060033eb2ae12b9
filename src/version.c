/*
 * version.c - the one place the release string lives in the binaries;
 * --version of both programs and GET /healthz print it.
 */
#include "version.h"

#ifndef ORGW_VERSION
#error "ORGW_VERSION is not defined: build with the Makefile (it reads VERSION)"
#endif

const char orgw_version[] = ORGW_VERSION;
