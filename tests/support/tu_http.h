/* A fake HTTP server for tests (libmicrohttpd): one thread, loopback only. */
#ifndef TU_HTTP_H
#define TU_HTTP_H

#include <microhttpd.h>

/* Starts handler on 127.0.0.1 at a free port (*port); NULL when it cannot. */
struct MHD_Daemon *tu_http_start(MHD_AccessHandlerCallback handler, unsigned *port);

#endif
