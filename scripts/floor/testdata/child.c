/* scripts/floor's C child: for each line from the TCP peer, a line to a
   file (the record) and then to stdout (the update). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <sys/socket.h>
int main(int argc, char **argv) {
  char host[64]; strcpy(host, argv[1]); char *colon = strchr(host, ':'); *colon = 0; int port = atoi(colon+1);
  int s = socket(AF_INET, SOCK_STREAM, 0); struct sockaddr_in a = {0}; a.sin_family = AF_INET; a.sin_port = htons(port); inet_pton(AF_INET, host, &a.sin_addr);
  if (connect(s, (void*)&a, sizeof a)) return 1;
  int f = open(argv[2], O_CREAT|O_WRONLY|O_APPEND, 0600);
  char buf[4096], out[8192];
  for (;;) { ssize_t n = read(s, buf, sizeof buf); if (n <= 0) return 0;
    int m = snprintf(out, sizeof out, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"text\":\"%.*s\"}}\n", (int)n-1, buf);
    write(f, out, m); write(1, out, m); }
}
