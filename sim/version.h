#ifndef SIM_VERSION_H
#define SIM_VERSION_H
#define COLLSIM_VERSION "0.1.0"
#endif
