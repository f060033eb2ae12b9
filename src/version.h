/*
 * version.h - the release this build is, from the top-level VERSION file
 * (the Makefile passes it to version.c alone, so a new version rebuilds
 * one object).
 */
#ifndef ORGW_VERSION_H
#define ORGW_VERSION_H

/* "MAJOR.MINOR.PATCH", static storage. */
extern const char orgw_version[];

#endif
