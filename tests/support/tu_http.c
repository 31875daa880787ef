#include "tu_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

struct MHD_Daemon *tu_http_start(MHD_AccessHandlerCallback handler, unsigned *port) {
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct MHD_Daemon *d =
      MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handler, NULL,
                       MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_END);
  if (d)
    *port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;
  return d;
}
