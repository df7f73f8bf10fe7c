/* The floor of any client that is a process linking nats.c (and through it
   libssl and libcrypto): it starts, prints nats.c's version, and exits,
   with no connection. Bench case 42 puts it beside the agent's socket. */
#include <nats/nats.h>
#include <stdio.h>

int main(void) {
  printf("%s\n", nats_GetVersion());
  return 0;
}
