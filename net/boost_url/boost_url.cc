// Boost.URL's compiled part, built in header-only mode (Boost 1.81's
// documented way: include src.hpp in exactly one translation unit), so no
// libboost_url is needed at link time or by the installed package. This file
// is the object library phasekey_boost_url (net/CMakeLists.txt); its one
// object goes into every static library whose code calls Boost.URL
// (phasekey_phases, phasekey_client, fake_gateway_lib). A program linking several of them
// takes the object from the first and needs none of the others' copies,
// which define the same symbols.
#include <boost/url/src.hpp>
