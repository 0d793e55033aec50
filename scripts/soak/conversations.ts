/** The soak's customers: short support messages, written for this run, that scripts/soak/traffic.ts strings into conversations. */

export interface Topic {
  name: string
  /** First messages; `{order}` is the conversation's order number. */
  openers: string[]
  /** Whether the topic's requests need an order number (the assistant asks for it when none is known). */
  needsOrder: boolean
  followUps: string[]
}

export const TOPICS: Topic[] = [
  {
    name: 'tracking',
    needsOrder: true,
    openers: ['hi, where is my parcel??', "where's my order at", 'my package still hasnt arrived', 'can you tell me where order {order} is?', 'track order {order} please'],
    followUps: ['and when will it arrive?', 'has it shipped yet?', 'it says delivered but nothing is here', 'can I change the delivery address?', 'is there a tracking number?', "it's been a week already", 'which courier is it with?']
  },
  {
    name: 'refund',
    needsOrder: true,
    openers: ['i want my money back for the shoes', "I'd like a refund please", 'the jacket I got is broken, I want a refund', 'refund for order {order}', 'I received the wrong size'],
    followUps: ['how long do refunds take?', 'I bought it 3 days ago', 'can I return it by post?', 'do I have to pay for the return shipping?', 'when will I see the money?', 'has my refund been processed?', 'can I exchange it instead?']
  },
  {
    name: 'cancellation',
    needsOrder: true,
    openers: ['I want to cancel an order', 'please cancel order {order}', 'can i still cancel my order', 'I ordered the wrong thing, cancel it please'],
    followUps: ['is there a cancellation fee?', 'and when do I get my money back?', 'I ordered it yesterday', 'ok please go ahead', 'what if it already shipped?']
  },
  {
    name: 'invoice',
    needsOrder: true,
    openers: ['i need the invoice pls', 'can i get the invoice for my last order', 'where can I download the invoice for {order}'],
    followUps: ['can you send it to my email?', 'my email is jo.doe@example.com', 'I need it for my company', 'where do I find old invoices?']
  },
  {
    name: 'account',
    needsOrder: false,
    openers: ['how do I reset my password', "I can't log in to my account", 'someone else is in my account', 'how do i change my email address'],
    followUps: ["I didn't get the reset email", 'can I delete my account instead?', 'how do I make a new account', 'can I have two accounts?', 'how do I switch accounts?']
  },
  {
    name: 'payment',
    needsOrder: false,
    openers: ['my card was charged twice', 'payment keeps getting declined', "my discount code doesn't work at checkout", 'what payment methods do you accept'],
    followUps: ['can I pay with paypal?', 'do you take apple pay?', 'when will the double charge be refunded?', 'I tried two different cards', 'can I pay in instalments?']
  },
  {
    name: 'delivery',
    needsOrder: false,
    openers: ['how long does delivery take', 'what shipping options do you have', 'do you ship to canada?', 'how much is shipping'],
    followUps: ['is there express shipping?', 'how much is next day delivery?', 'and if I order today?', 'can I pick it up in store?', 'do you deliver on saturdays?']
  },
  {
    name: 'complaint',
    needsOrder: false,
    openers: ['an item is missing from my parcel', 'this is the third time my order is late, I want to complain', 'can I talk to a real person please'],
    followUps: ['I want to speak to someone', 'this is ridiculous', "ok, what's the phone number?", 'what are your opening hours?', 'can I email you instead?']
  }
]
export const ORDER_ANSWERS = ["it's {order}", 'order no. {order}', 'my order number is {order}', '{order}', 'its #{order} i think']
export const GENERIC_FOLLOW_UPS = [
  'thanks', 'thank you so much!', 'and when will it arrive?', 'what about my refund?', 'ok', 'one more thing, how do I track my order?',
  'can I still cancel it?', "what's your returns policy?", 'hello?', 'thanks, that is all', 'how do I contact customer service?',
  'can I change my delivery address?', 'is the blue one back in stock?', 'how do I unsubscribe from the newsletter?',
  'I want to leave a review', 'what about order {order}?', 'thanks! and when will it arrive?', 'ok great, bye'
]
export const NAMES = ['Ana', 'Jonas', 'Mia', 'Tom', 'Priya', 'Lukas', 'Chen', 'Sofia']
