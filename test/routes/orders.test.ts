// Order rules in the default inventory mode (product actors + group commit).
import { orderRulesSuite } from '../orders/order-rules';

orderRulesSuite('actor');
