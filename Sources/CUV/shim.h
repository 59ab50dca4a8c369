#ifndef PACKD_CUV_SHIM_H
#define PACKD_CUV_SHIM_H
#include <uv.h>
#include <signal.h>
#include <sys/resource.h>
#endif
