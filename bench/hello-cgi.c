/* CGI "hello world" (scenario 8, the CGI load of thttpd's comparison table):
   prints a header block and a 13-byte body, then exits. One write, so a
   server sees the whole answer in one read. */
#include <string.h>
#include <unistd.h>
int main(void) {
  static const char out[] =
      "Content-Type: text/plain\r\n"
      "Content-Length: 13\r\n"
      "\r\n"
      "Hello, world\n";
  return write(1, out, sizeof out - 1) == (ssize_t)(sizeof out - 1) ? 0 : 1;
}
