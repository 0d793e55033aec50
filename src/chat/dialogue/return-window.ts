import { dayNumber, isoDate } from '../calendar.ts'

/** Where a purchase stands against the return window, computed from calendar dates in UTC. */
export type WindowSituation = 'future_purchase' | 'window_last_day' | 'inside_window' | 'outside_window'

export interface ReturnWindow {
  situation: WindowSituation
  /** The last day a return or refund can be asked for: purchase date + window days (YYYY-MM-DD). */
  deadline: string
  /** Whole days from today to the deadline; negative once it has passed. */
  daysLeft: number
  /** Whole days since the purchase; negative for a date in the future. */
  daysSincePurchase: number
}

/**
 * The window is inclusive: bought on 1 March with 30 days, the customer can still ask on 31 March (the last day)
 * and not on 1 April. A purchase date after today is reported as such, never as inside or outside the window.
 */
export function returnWindow (purchaseDate: string, today: string, windowDays: number): ReturnWindow {
  const purchased = dayNumber(purchaseDate)
  const now = dayNumber(today)
  const deadline = purchased + windowDays
  const daysLeft = deadline - now
  const situation: WindowSituation = purchased > now
    ? 'future_purchase'
    : daysLeft === 0 ? 'window_last_day' : daysLeft > 0 ? 'inside_window' : 'outside_window'
  return { situation, deadline: isoDate(deadline), daysLeft, daysSincePurchase: now - purchased }
}
