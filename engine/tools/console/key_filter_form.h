// The operator's key filter (admin::KeyFilter) in the console's URLs and
// forms: the fields state, flow, account, recovery_point, error_class,
// older_than_s and newer_than_s (an empty field is no filter). The keys
// page, its batch confirmation and the batch's POST all read it here, so a
// filter survives the walk from one to the next unchanged.
#ifndef PHASEKEY_TOOLS_SRC_CONSOLE_KEY_FILTER_FORM_H_
#define PHASEKEY_TOOLS_SRC_CONSOLE_KEY_FILTER_FORM_H_

#include <map>
#include <string>

#include "admin/key_admin.h"

namespace phasekey::console {

// Fills *out from a query string's or a form's fields; "" when they form a
// filter, else why not, in one line (an unknown state or error class, an
// age that is not a whole number of seconds: admin::FilterProblem).
std::string FilterFromForm(const std::map<std::string, std::string>& form, admin::KeyFilter* out);
// The filter's fields as query parameters, each after a '&' ("" for none).
std::string FilterQuery(const admin::KeyFilter& filter);
// The filter's fields as hidden inputs of a form (escaped).
std::string FilterHiddenFields(const admin::KeyFilter& filter);
// The filter form of the keys page, showing `filter`'s values.
std::string FilterFormHtml(const admin::KeyFilter& filter);

}  // namespace phasekey::console

#endif  // PHASEKEY_TOOLS_SRC_CONSOLE_KEY_FILTER_FORM_H_
