// NewDefaultAdapters (declared in adapters.h).
#include "phasekey/phases/adapters.h"

namespace phasekey::phases {

std::vector<std::unique_ptr<ProviderAdapter>> NewDefaultAdapters() {
  std::vector<std::unique_ptr<ProviderAdapter>> all;
  all.push_back(NewStripeV1Adapter());
  all.push_back(NewStripeV2Adapter());
  all.push_back(NewAdyenAdapter());
  all.push_back(NewSquareAdapter());
  all.push_back(NewTapAdapter());
  all.push_back(NewMoyasarAdapter());
  all.push_back(NewPayPalAdapter());
  all.push_back(NewCheckoutComAdapter());
  all.push_back(NewAmazonPayAdapter());
  all.push_back(NewHyperPayAdapter());
  all.push_back(NewPayTabsAdapter());
  all.push_back(NewAmazonPaymentServicesAdapter());
  return all;
}

}  // namespace phasekey::phases
