// The same order rules in the baseline mode (INVENTORY_MODE=transactional).
import { orderRulesSuite } from '../orders/order-rules';

orderRulesSuite('transactional');
