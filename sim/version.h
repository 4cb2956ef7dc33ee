#ifndef SIM_VERSION_H
#define SIM_VERSION_H
#define COLLSIM_VERSION "0.1.0"
/* Where `make install` puts docs/ (the Makefile passes PREFIX's). */
#ifndef COLLSIM_DOCDIR
#define COLLSIM_DOCDIR "/usr/local/share/doc/collsim"
#endif
/* The docs/ of the source tree built from, named by --help when nothing is
 * installed (the Makefile passes it; "" = none). */
#ifndef COLLSIM_SRCDOCS
#define COLLSIM_SRCDOCS ""
#endif
#endif
