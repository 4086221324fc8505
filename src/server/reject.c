/*
 * Refusing an upgrade request (/rpc/ws or the relay) with a whole HTTP answer, for both: lws
 * has not parsed the request's HTTP version yet at that point and would say HTTP/1.0, which
 * LangBot's client (websockets) refuses to read as a status.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/base/cleanup.h"
#include "server.h"

/* Returns 1, "answered", for LWS_CALLBACK_HTTP_CONFIRM_UPGRADE. */
int server_http_reject(struct lws *wsi, unsigned status, const char *ctype, const char *body)
{
	const char *reason = status == 400   ? "Bad Request"
			     : status == 401 ? "Unauthorized"
			     : status == 404 ? "Not Found"
					     : "Service Unavailable";
	_cleanup_free_ char *buf = NULL;
	int n = asprintf(&buf,
			 "%*sHTTP/1.1 %u %s\r\ncontent-type: %s\r\ncontent-length: %zu\r\n"
			 "connection: close\r\n\r\n%s",
			 LWS_PRE, "", status, reason, ctype, strlen(body), body);
	if (n < 0)
		return -1;
	size_t len = (size_t)n - LWS_PRE;
	return lws_write(wsi, (unsigned char *)buf + LWS_PRE, len, LWS_WRITE_HTTP_HEADERS) <
		       (int)len
		   ? -1
		   : 1;
}
